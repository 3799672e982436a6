"""`occusim report`: Markdown tables, and the self-contained HTML page opened in headless Chromium."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from occusim.analysis import RunConfig, RunDir, build_report, render_html, render_markdown
from occusim.clients.cli import main
from tests.helpers import synthetic_rows, write_run

# Writes each image's decoded size into the DOM once the page has loaded, for --dump-dom to show.
PROBE = """<script>
window.addEventListener("load", () => {
  const sizes = Array.from(document.images).map(i => i.complete + ":" + i.naturalWidth + "x" + i.naturalHeight);
  document.body.setAttribute("data-images", sizes.join(","));
});
</script></body>"""


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    write_run(folder, synthetic_rows())
    return folder


def test_markdown_report_has_the_tables(run_dir: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["report", str(run_dir)]) == 0
    text = capsys.readouterr().out

    for title in ("Completion by fault mode", "Robustness (paired)", "Completion by category and fault mode",
                  "Completion by category (all fault modes pooled)", "Completion by difficulty (all fault modes pooled)",
                  "pass@k and pass^k", "Faults met per episode", "Tokens and cost by role", "Passed trials by task",
                  "Infrastructure errors (not counted as agent failures)"):
        assert f"## {title}" in text
    assert "- **Episodes:** 24 (23 scored, 0 unjudged, 1 infrastructure errors)" in text
    assert "| customs/declare E3 trial 1 | ProviderError: down |" in text
    assert "![" not in text  # no image files were written for stdout
    # customs/declare's E3 trial 1 failed to run, but its trial 0 was scored: all three tasks are paired.
    assert re.search(r"- \*\*Robustness:\*\* \d\.\d{3}, 95 % CI \[\d\.\d{3}, \d\.\d{3}\] - min\(E1, E2, E3\) / E0 .* "
                     r"over 3 task\(s\) scored in every mode", text)
    assert "- **Judge abstentions:** 0/0" in text
    assert re.search(r"\| E0 \| 3/6 \| 50\.0% \| \[\d+\.\d%, \d+\.\d%\] \|", text)


def test_report_shows_partial_robustness_and_unjudged_episodes():
    rows = [row for row in synthetic_rows() if row.fault_mode in ("E0", "E2")]
    rows[0] = rows[0].model_copy(update={"status": "unjudged", "error": "no usable judge vote on answer#0"})
    config = RunConfig(agent_model="agent-x", world_model="world-y", judge_model="judge-z", faults=["E0", "E2"])

    text = render_markdown(build_report(config, rows, with_figures=False))

    assert "(partial)" in text and "partial: no scored E1, E3" in text
    assert "- **Episodes:** 12 (11 scored, 1 unjudged, 0 infrastructure errors)" in text
    assert "## Unjudged episodes (the judge could not decide; not counted as agent failures)" in text
    assert f"| {rows[0].task_id} E0 trial 0 | no usable judge vote on answer#0 |" in text


def test_html_report_is_self_contained(run_dir: Path, tmp_path: Path):
    out = tmp_path / "report.html"

    assert main(["report", str(run_dir), "--format", "html", "--out", str(out)]) == 0

    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert len(re.findall(r'<img class="plot" alt="[^"]+" src="data:image/png;base64,', page)) == 2
    assert not re.search(r'src="(?!data:)', page)  # nothing is fetched from anywhere
    # The only links are the viewer's pages, relative to /report where `occusim view` serves this file.
    assert set(re.findall(r'href="([^"]*)"', page)) - {"./"} == set(re.findall(r'href="(episodes/[^"/]+)"', page))
    assert len(re.findall(r'<a class="episode" href="episodes/', page)) == 24  # one per row, the failed one too
    assert "http://" not in page and "https://" not in page
    assert "<script" not in page


def test_plots_render_in_headless_chromium(run_dir: Path, tmp_path: Path, chromium: str):
    config, rows = RunDir(run_dir).read_config(), RunDir(run_dir).latest_rows()
    page = tmp_path / "probe.html"
    page.write_text(render_html(build_report(config, rows)).replace("</body>", PROBE))
    profile = tmp_path / "profile"

    result = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
         "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )

    assert result.returncode == 0, result.stderr[-2000:]
    match = re.search(r'data-images="([^"]*)"', result.stdout)
    assert match, "the page's load handler did not run:\n" + result.stdout[:500]
    sizes = [entry.split(":") for entry in match.group(1).split(",")]
    assert len(sizes) == 2
    for complete, size in sizes:
        width, height = (int(value) for value in size.split("x"))
        assert complete == "true" and width > 300 and height > 150


def test_a_run_where_nothing_passed_says_so_in_its_chart_and_its_words():
    rows = [row.model_copy(update={"passed": False, "score": 0.0} if row.scored else {})
            for row in synthetic_rows() if row.fault_mode == "E0"]
    config = RunConfig(agent_model="agent-x", world_model="world-y", judge_model="judge-z", faults=["E0"])

    report = build_report(config, rows)
    page = render_html(report)

    (chart,) = [figure for figure in report.figures if figure.name == "completion_by_category"]
    assert chart.note.startswith("Every completion rate is 0")
    assert "no bar to draw" in page
    facts = dict(report.facts)
    assert "undefined - " not in facts["Robustness"] and facts["Robustness"].startswith("undefined: no scored E1")


def test_cost_is_written_the_same_way_for_every_role():
    from occusim.analysis._report import cost_text
    from occusim.environments import Usage

    assert cost_text(Usage()) == "$0.0000 (no call)"
    assert cost_text(Usage(calls=3, cost_usd=0.0)) == "$0.0000"
    assert cost_text(Usage(calls=3, cost_usd=0.01234)) == "$0.0123"
    assert cost_text(Usage(calls=3)) == "not priced"
