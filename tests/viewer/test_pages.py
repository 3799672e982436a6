"""The viewer's pages rendered from a real run folder and store: filters, timeline, verdict, escaping."""

from __future__ import annotations

import re
from pathlib import Path

import httpx2
import pytest

from occusim.analysis import RunDir
from occusim.clients import RunEpisodes
from occusim.environments import EpisodeRecord, StepRecord
from occusim.server import Store
from occusim.service import StoreEpisodes
from occusim.viewer import (
    EpisodeDetail,
    EpisodeEntry,
    Selection,
    render_episode,
    render_index,
    timeline,
    viewer_app,
)
from tests.helpers import CLEAN, FAULTED, HOSTILE_ID, write_viewed_run


def _ids(page: str) -> list[str]:
    return re.findall(r'<a href="/episodes/([^"]+)">', page)


async def test_the_index_lists_every_episode_with_its_id(client):
    page = (await client.get("/")).text

    assert _ids(page) == [CLEAN, FAULTED, HOSTILE_ID]
    assert "4 of 4 episodes" in page  # the infrastructure error is listed, without a link
    assert "ProviderError: down" in page
    assert '<select name="fault">' in page and '<select name="flag">' not in page  # no record carries flags


@pytest.mark.parametrize(("query", "expected"), [
    ("fault=E2", [FAULTED, HOSTILE_ID]),
    ("passed=yes", [CLEAN]),
    ("passed=no&task=chargeback/dispute", [FAULTED]),
    ("category=Healthcare+%26+Life+Sciences", [HOSTILE_ID]),
    ("world_model=world-y&fault=E0", [CLEAN]),
    ("fault=E3", []),
])
async def test_filters_work_from_the_query_string(client, query, expected):
    page = (await client.get(f"/?{query}")).text

    assert _ids(page) == expected
    for name, value in (part.split("=") for part in query.split("&")):
        if name == "fault":
            assert f'<option value="{value}" selected>' in page


async def test_an_episode_page_shows_the_fault_beside_the_truth(client):
    page = (await client.get(f"/episodes/{FAULTED}")).text

    assert "fault implicit: drop_fields" in page and "dropped: amount" in page
    assert re.search(r'<td class="added"><mark>\s*&#34;amount&#34;: 89.99,</mark></td>', page)
    assert "State patch" in page and "State after step 1" in page
    assert "Refunded the customer" in page  # the final answer
    assert "The amount was never stated." in page and "Agrees with vote 1." in page  # every vote's reason
    assert page.count('class="disagrees"') == 1  # vote 0 passed, the check failed
    assert "agent</td>" in page and ">2000<" in page  # usage by role from the run's row
    assert "1701 ms in all" in page  # 850 + 851


async def test_an_unknown_episode_is_404(client):
    assert (await client.get("/episodes/ep-none")).status_code == 404


async def test_hostile_content_is_escaped_everywhere(client):
    response = await client.get(f"/episodes/{HOSTILE_ID}")
    page = response.text

    assert "<script>window" not in page and "<img src=x" not in page
    assert page.count("&lt;script&gt;window.pwned") >= 6  # arguments, observation, truth, error, answer, reasons
    scripts = re.findall(r"<script[^>]*>", page)
    assert scripts == ['<script src="/static/viewer.js" defer>']
    assert "script-src 'self'" in response.headers["content-security-policy"]


async def test_the_local_app_refuses_other_host_names(client):
    response = await client.get("/", headers={"Host": "rebound.example"})

    assert response.status_code == 400


async def test_assets_are_served_from_the_package(client):
    css = await client.get("/static/viewer.css")
    script = await client.get("/static/viewer.js")

    assert css.status_code == 200 and "table.diff" in css.text
    assert script.status_code == 200 and "submit()" in script.text
    index = (await client.get("/")).text
    assert not re.search(r'(?:src|href)="(?:https?:)?//', index)  # nothing from another host


def test_the_state_is_replayed_step_by_step():
    record = EpisodeRecord(id="e", task_id="t", scenario_id="s", initial_state={"n": 0}, steps=[
        StepRecord(index=0, tool="a", observation={}, state_patch=[{"op": "replace", "path": "/n", "value": 1}]),
        StepRecord(index=1, tool="b", observation={}),
        StepRecord(index=2, tool="c", observation={}, state_patch=[{"op": "remove", "path": "/missing"}]),
    ])

    views = timeline(record)

    assert [view.state_after for view in views[:2]] == ['{\n  "n": 1\n}', None]  # step 1 changed nothing
    assert views[2].state_after is None and "from step 2 on" in (views[2].state_problem or "")


def test_a_selection_keeps_entries_matching_every_filter():
    entries = [EpisodeEntry(episode_id=str(n), task_id="t", scenario_id="s", fault_mode=mode, status="ok",
                            passed=passed, flags=flags)
               for n, (mode, passed, flags) in enumerate([("E0", True, []), ("E1", None, ["omission"]),
                                                          ("E1", False, ["omission", "value_mismatch"])])]

    def kept(query: dict[str, str]) -> list[str | None]:
        return [entry.episode_id for entry in Selection.from_query(query).apply(entries)]

    assert kept({}) == ["0", "1", "2"]
    assert kept({"passed": "none"}) == ["1"]
    assert kept({"flag": "omission", "passed": "no"}) == ["2"]
    assert kept({"fault": "E1", "flag": "value_mismatch"}) == ["2"]
    assert kept({"unknown": "x", "fault": ""}) == ["0", "1", "2"]


async def test_a_store_alone_lists_its_episodes_newest_first_with_their_verdicts(tmp_path: Path):
    run = await write_viewed_run(tmp_path / "run")
    async with Store(run.db) as store:
        app = viewer_app(StoreEpisodes(store))
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            index = (await http.get("/")).text
            failed_e2 = (await http.get("/?fault=E2&passed=no")).text
            page = (await http.get(f"/episodes/{FAULTED}")).text
            refused = await http.get("/episodes/bad%00id")

    assert _ids(index) == [HOSTILE_ID, FAULTED, CLEAN]
    # The faults met, from the steps (a store alone does not say how many were planned).
    assert 'title="drop_fields">1 call(s)<' in index and 'title="stale">1 call(s)<' in index
    assert _ids(failed_e2) == [HOSTILE_ID, FAULTED]
    assert '<td class="added"><mark>' in page and "Agrees with vote 1." in page
    assert refused.status_code == 404


def test_the_simulator_audits_flags_show_on_their_step():
    class FlaggedStep(StepRecord):  # the shape of records that carry the per-step audit's flags
        flags: list[dict[str, str]] = []

    step = FlaggedStep(index=0, tool="get_dispute", observation={"amount": 12},
                       flags=[{"kind": "value_mismatch", "detail": "amount is 89.99 in the state", "path": "/amount"}])
    record = EpisodeRecord(id="e-1", task_id="t", scenario_id="s", steps=[step])
    entry = EpisodeEntry(episode_id="e-1", task_id="t", scenario_id="s", fault_mode="E0", status="judged",
                         flags=["value_mismatch"])

    page = render_episode(EpisodeDetail(entry=entry, record=record), base="", source_title="test")

    assert '<span class="badge flag" title="amount is 89.99 in the state">value_mismatch</span>' in page
    assert "<b>value_mismatch</b> at <code>/amount</code>: amount is 89.99 in the state" in page
    index = render_index([entry], {"flag": "value_mismatch"}, base="", source_title="test")
    assert '<select name="flag">' in index and '<option value="value_mismatch" selected>' in index


def test_a_runs_rows_give_the_index_their_flagged_steps():
    from occusim.analysis import StepFlags
    from occusim.clients._viewer_run import _entry
    from occusim.environments import FlagKind, StepFlag
    from tests.helpers import synthetic_rows

    def flag(kind: FlagKind) -> StepFlag:
        return StepFlag(kind=kind, detail="found by the audit")

    row = synthetic_rows()[0].model_copy(update={"flagged_steps": [
        StepFlags(step=1, tool="get_order", flags=[flag(FlagKind.omission), flag(FlagKind.value_mismatch)]),
        StepFlags(step=2, tool="get_order", flags=[flag(FlagKind.omission)])]})

    assert _entry(row).flags == ["omission", "value_mismatch"]
    assert _entry(synthetic_rows()[0]).flags == []


async def test_a_run_without_its_store_still_shows_its_rows(tmp_path: Path):
    run = await write_viewed_run(tmp_path / "run")
    run.db.unlink()
    app = viewer_app(RunEpisodes(RunDir(run.folder), None, store_note="no store at episodes.db"))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        index = (await http.get("/")).text
        page = (await http.get(f"/episodes/{FAULTED}")).text

    assert _ids(index) == [CLEAN, FAULTED, HOSTILE_ID]
    assert "no store at episodes.db" in page and "Refunded the customer" in page  # the row's answer
    assert "The amount was never stated." in page and 'class="step' not in page
