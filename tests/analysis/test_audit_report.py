"""The per-step audit in a run's report and export: flags per 100 steps by world model and by scenario,
history-mode episodes marked as not audited against the state, flagged steps in every export row."""

from __future__ import annotations

import json
from pathlib import Path

from occusim.analysis import RunConfig, audit_rates, build_report, export_run, render_markdown
from occusim.clients.cli import main
from tests.helpers import synthetic_rows, write_run


def test_flags_per_100_steps_by_world_model_and_by_scenario():
    rows = synthetic_rows()
    by_scenario = audit_rates(rows, lambda row: row.scenario_id)
    customs = by_scenario["customs"]
    # customs/declare: 8 episodes, one an infrastructure error (not counted); 7 x 2 steps, 4 flagged ones.
    assert (customs.steps, customs.flagged_steps, customs.flags) == (14, 4, 4)
    assert customs.per_100_steps == 100 * 4 / 14
    assert customs.by_kind == {"fabricated_entity": 4}
    assert by_scenario["pharmacy"].flags == 0
    assert audit_rates(rows, lambda row: row.world_model)["world-y"].steps == 46


def test_the_report_shows_the_audit_table_and_marks_history_mode():
    rows = synthetic_rows()
    for row in rows:
        if row.scenario_id == "pharmacy":
            row.audited = "no_state"
    markdown = render_markdown(build_report(_config(), rows, with_figures=False))
    assert "## Simulator audit (flags per 100 steps)" in markdown
    assert "| scenario: customs | 14 | 4 | 28.6 | fabricated_entity 4 |" in markdown
    assert "| scenario: pharmacy | 16 | 0 | 0.0; state checks not audited (history mode) | - |" in markdown
    assert "| world model: world-y | 46 | 4 | 8.7 (16 steps in history mode, without the state checks) |" in markdown


def test_every_export_row_carries_its_flagged_steps(tmp_path: Path):
    write_run(tmp_path / "run", synthetic_rows())
    lines = [json.loads(line) for line in export_run(tmp_path / "run", "openai")]
    flagged = [line["metadata"] for line in lines if line["metadata"]["flagged_steps"]]
    assert {m["task_id"] for m in flagged} == {"customs/declare"}
    assert flagged[0]["audited"] == "state"
    assert flagged[0]["flagged_steps"] == [{"step": 1, "tool": "get_order", "flags": [{
        "kind": "fabricated_entity", "path": "/order_id",
        "detail": "the id 'ORD-9' appears nowhere in the state, the call or earlier observations"}]}]
    assert main(["export", str(tmp_path / "run"), "--format", "sharegpt", "--out", str(tmp_path / "s.jsonl")]) == 0
    assert "fabricated_entity" in (tmp_path / "s.jsonl").read_text()


def _config() -> RunConfig:
    return RunConfig(agent_model="agent-x", world_model="world-y", judge_model="judge-z")
