"""`occusim view` for real: the command serves a run folder and headless Chromium navigates it, filters,
opens an episode and sees the fault's difference; the screenshots are saved in the test's folder."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from occusim.clients.cli import main
from tests.helpers import (
    AGENT_THOUGHT,
    CLEAN,
    FAULTED,
    HOSTILE_ID,
    TASK_TEXT,
    Browser,
    free_port,
    write_viewed_run,
)


@pytest.fixture
async def run_dir(tmp_path: Path) -> Path:
    return (await write_viewed_run(tmp_path / "run")).folder


@contextlib.contextmanager
def serving(*arguments: str) -> Iterator[str]:
    """`occusim view ARGUMENTS --no-browser` in its own process; yields the address it serves."""
    port = free_port()
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    process = subprocess.Popen([sys.executable, "-m", "occusim", "view", *arguments, "--port", str(port),
                                "--no-browser"], env=env, stderr=subprocess.PIPE, text=True)
    address = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx2.get(address, timeout=2).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"occusim view did not start: {process.stderr.read() if process.stderr else ''}")
            time.sleep(0.2)
        yield address
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def viewer(run_dir: Path) -> Iterator[str]:
    with serving(str(run_dir)) as address:
        yield address


def _rows(page: Browser) -> list[str]:
    return page.evaluate("Array.from(document.querySelectorAll('tr.episode td.id')).map(c => c.textContent.trim())")


def test_navigate_filter_open_an_episode_and_see_the_fault(viewer: str, tmp_path: Path, chromium: str):
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with Browser(chromium, tmp_path / "profile") as page:
        page.goto(viewer)
        assert _rows(page) == [CLEAN, FAULTED, HOSTILE_ID, "none"]
        page.screenshot(shots / "1-index.png")

        # Choose a fault mode as a user would; the page's script submits the form on change.
        page.act_and_wait("const s = document.querySelector('select[name=fault]'); s.value = 'E2';"
                          "s.dispatchEvent(new Event('change', {bubbles: true}))")
        assert page.evaluate("location.search") == "?task=&category=&fault=E2&passed=&world_model="
        assert _rows(page) == [FAULTED, HOSTILE_ID]
        # And with the button, as without JavaScript.
        page.act_and_wait("document.querySelector('select[name=passed]').value = 'no';"
                          "document.querySelector('select[name=task]').value = 'chargeback/dispute';"
                          "document.querySelector('form.filters button').click()")
        assert _rows(page) == [FAULTED]
        assert page.evaluate("document.getElementById('count').textContent") == "1 of 4 episodes"
        page.screenshot(shots / "2-filtered.png")

        page.act_and_wait(f"document.querySelector('a[href=\"/episodes/{FAULTED}\"]').click()")
        assert page.evaluate("location.pathname") == f"/episodes/{FAULTED}"
        diff = page.evaluate("Array.from(document.querySelectorAll('table.diff td.added mark'))"
                             ".map(m => m.textContent.trim())")
        assert diff == ['"amount": 89.99,']
        # The marked line is visibly highlighted (the package's stylesheet loaded).
        assert page.evaluate("getComputedStyle(document.querySelector('table.diff mark')).backgroundColor") \
            == "rgb(255, 211, 107)"
        assert page.evaluate("document.querySelectorAll('li.step').length") == 2
        assert page.evaluate("document.querySelectorAll('table.votes tr.disagrees').length") == 1
        page.screenshot(shots / "3-episode.png")

        page.goto(viewer + f"episodes/{HOSTILE_ID}")
        assert page.evaluate("window.pwned === undefined")
        assert page.dialogs == []
        assert page.evaluate("document.querySelector('pre.answer').textContent").startswith("<script>window.pwned")
        page.screenshot(shots / "4-hostile.png")

    for name in ("1-index", "2-filtered", "3-episode", "4-hostile"):
        png = (shots / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000


def test_bad_arguments_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["view", "--no-browser"]) == 2
    assert "give a RUN_DIR" in capsys.readouterr().err
    assert main(["view", str(tmp_path), "--no-browser"]) == 2
    assert "run.json not found" in capsys.readouterr().err
    assert main(["view", "--db", str(tmp_path / "none.db"), "--no-browser"]) == 2
    assert "no store at" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()


def test_a_store_alone_is_served_too(run_dir: Path):
    with serving("--db", str(run_dir / "episodes.db")) as address:
        index = httpx2.get(address, timeout=30).text
        page = httpx2.get(f"{address}episodes/{FAULTED}", timeout=30).text

    assert index.index(HOSTILE_ID) < index.index(FAULTED) < index.index(CLEAN)  # newest first
    assert "3 of 3 episodes" in index
    assert "fault implicit: drop_fields" in page and "<mark>" in page


def test_the_episode_summary_is_on_screen_first_and_the_story_reads_on(run_dir: Path, tmp_path: Path,
                                                                        chromium: str):
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with serving(str(run_dir)) as address, Browser(chromium, tmp_path / "profile") as page:
        page.goto(address)
        summary = page.evaluate("document.getElementById('run-summary').textContent")
        assert summary.startswith("4 episode(s): 1 passed, 2 failed")
        met = page.evaluate("Array.from(document.querySelectorAll('td.faults-met')).map(c => c.textContent)")
        assert met == ["0 of 0", "1 of 2", "1 of 2", "-"]
        page.screenshot(shots / "1-index.png")

        page.goto(address + f"episodes/{FAULTED}")
        # The summary (instruction, models, outcome) is within the first screen, above the timeline.
        top = page.evaluate("document.querySelector('section.story').getBoundingClientRect().top")
        bottom = page.evaluate("document.querySelector('dl.summary').getBoundingClientRect().bottom")
        assert 0 <= top and bottom <= page.evaluate("window.innerHeight")
        assert page.evaluate("document.querySelector('pre.instruction').textContent") == TASK_TEXT
        story = page.evaluate("document.querySelector('section.story').innerText")
        assert "agent-x" in story and "world-y" in story and "judge-z" in story and "1 of 2 planned" in story
        said = page.evaluate("Array.from(document.querySelectorAll('li.said.assistant pre')).map(p => p.textContent)")
        assert said == [AGENT_THOUGHT, "Done: Refunded the customer"]
        assert page.evaluate("document.querySelectorAll('p.no-change').length") == 1
        page.screenshot(shots / "2-episode-summary.png")

        page.act_and_wait("document.querySelector('a[rel=next]').click()")
        assert page.evaluate("location.pathname") == f"/episodes/{HOSTILE_ID}"
        page.act_and_wait("document.querySelector('a[rel=prev]').click()")
        page.act_and_wait("document.querySelector('a[rel=prev]').click()")
        assert page.evaluate("location.pathname") == f"/episodes/{CLEAN}"
        page.screenshot(shots / "3-clean-episode.png")

    for name in ("1-index", "2-episode-summary", "3-clean-episode"):
        png = (shots / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000


def test_the_report_opens_through_the_viewer_and_its_links_go_both_ways(run_dir: Path, tmp_path: Path,
                                                                        chromium: str):
    shots = tmp_path / "screenshots"
    shots.mkdir()
    assert main(["report", str(run_dir), "--format", "html", "--out", str(run_dir / "report.html")]) == 0
    with serving(str(run_dir)) as address, Browser(chromium, tmp_path / "profile") as page:
        page.goto(address)
        page.act_and_wait("document.querySelector('a.report').click()")
        assert page.evaluate("location.pathname") == "/report"
        assert page.evaluate("document.querySelector('h1').textContent") == "occusim run report"
        # The report's own CSS applies under the viewer's policy for it, and its plots are drawn.
        assert page.evaluate("getComputedStyle(document.body).maxWidth") != "none"
        assert page.evaluate("Array.from(document.images).every(i => i.complete && i.naturalWidth > 300)")
        page.screenshot(shots / "1-report.png")

        page.act_and_wait(f"document.querySelector('a.episode[href=\"episodes/{FAULTED}\"]').click()")
        assert page.evaluate("location.pathname") == f"/episodes/{FAULTED}"
        page.screenshot(shots / "2-episode-from-report.png")
        page.act_and_wait("document.querySelector('a.report').click()")
        assert page.evaluate("location.pathname") == "/report"
        page.act_and_wait("document.querySelector('a.viewer').click()")
        assert page.evaluate("location.pathname") == "/"
        assert _rows(page) == [CLEAN, FAULTED, HOSTILE_ID, "none"]

    for name in ("1-report", "2-episode-from-report"):
        png = (shots / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000


def _label(page: Browser, item: str, verdict: str, note: str = "") -> None:
    """Choose pass or fail for an item with a click, and type a note into its box."""
    page.evaluate(f"document.querySelector('input[name=\"verdict-{item}\"][value=\"{verdict}\"]').click()")
    if note:
        page.evaluate(f"document.querySelector('textarea[name=\"note-{item}\"]').focus()")
        page.send("Input.insertText", session=True, text=note)


def test_label_two_episodes_in_the_page_then_measure_the_judge(run_dir: Path, tmp_path: Path, chromium: str,
                                                                capsys: pytest.CaptureFixture[str]):
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with serving(str(run_dir), "--label", "--reviewer", "alice") as address, \
            Browser(chromium, tmp_path / "profile") as page:
        page.goto(address)
        page.act_and_wait(f"document.querySelector('a[href=\"/episodes/{CLEAN}\"]').click()")
        assert page.evaluate("document.querySelectorAll('tr.label-row').length") == 2
        _label(page, "state-closed", "pass")
        _label(page, "answer", "pass", "names the refunded $89.99")
        page.screenshot(shots / "1-labelling.png")
        page.act_and_wait("document.querySelector('form.labels button').click()")
        assert page.evaluate("location.pathname + location.search") == f"/episodes/{CLEAN}?saved=2"
        assert page.evaluate("document.getElementById('saved').textContent").startswith("Saved 2 label(s).")
        assert page.evaluate("document.querySelector('input[name=\"verdict-answer\"][value=\"pass\"]').checked")
        assert page.evaluate("document.querySelector('textarea[name=\"note-answer\"]').value") \
            == "names the refunded $89.99"

        page.act_and_wait("document.querySelector('a.next').click()")
        assert page.evaluate("location.pathname") == f"/episodes/{FAULTED}"
        _label(page, "state-closed", "pass")
        _label(page, "answer", "pass", "the amount is in the first observation")
        page.act_and_wait("document.querySelector('form.labels button').click()")
        page.screenshot(shots / "2-saved.png")
        assert page.dialogs == []

    with serving(str(run_dir), "--label", "--reviewer", "bob") as address, \
            Browser(chromium, tmp_path / "profile-bob") as page:
        page.goto(address + f"episodes/{FAULTED}")
        assert page.evaluate("document.querySelectorAll('input:checked').length") == 0  # alice's labels are hers
        _label(page, "answer", "fail", "never states the amount")
        page.act_and_wait("document.querySelector('form.labels button').click()")
        assert page.evaluate("location.search") == "?saved=1"
        page.screenshot(shots / "3-second-reviewer.png")

    alice = [json.loads(line) for line in (run_dir / "labels" / "alice.jsonl").read_text("utf-8").splitlines()]
    assert [(line["episode_id"], line["item"], line["passed"], line["note"]) for line in alice] == [
        (CLEAN, "state-closed", True, ""), (CLEAN, "answer", True, "names the refunded $89.99"),
        (FAULTED, "state-closed", True, ""), (FAULTED, "answer", True, "the amount is in the first observation"),
    ]
    assert main(["judge-agreement", "--labels", str(run_dir / "labels" / "alice.jsonl"),
                 str(run_dir / "labels" / "bob.jsonl"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # The judge failed FAULTED's answer: alice disagrees, bob agrees; the two reviewers disagree on it.
    assert report["by_reviewer"]["alice"]["agreement"] == 0.75 and report["by_reviewer"]["bob"]["agreement"] == 1.0
    assert report["by_kind"]["state"]["both_pass"] == 2 and report["by_kind"]["llm"]["labels"] == 3
    assert [(p["first"], p["second"], p["labels"], p["agreement"]) for p in report["reviewer_pairs"]] == [
        ("alice", "bob", 1, 0.0)]
    for name in ("1-labelling", "2-saved", "3-second-reviewer"):
        png = (shots / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000
