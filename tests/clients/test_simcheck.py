"""`occusim simcheck`: a faithful scripted simulator scores 100 %; each kind of error lowers its own figure only."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from occusim.clients import FidelityFigures, SimcheckReport, run_simcheck, select_checkable
from occusim.clients.cli import main
from occusim.environments import Catalog, load_catalog
from occusim.llm import scripted_model
from occusim.server import WorldModel
from tests.helpers import TASK_A, TASK_B, ReplayWorld, tracked_call

FIGURES = ("valid", "first_try", "grounded", "complete", "entity_recall", "values_agree", "value_fields",
           "no_invented_fields", "patch_agrees", "read_only_kept", "faithful")
EXTRA = {"op": "add", "path": "/simcheck_extra", "value": 1}
Mutation = Callable[[str, dict[str, Any]], dict[str, Any] | str]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    """The two tasks' scenarios of the bundled catalog, their reading tools declared read-only and every tool
    free to write anywhere (so that a wrong patch is a fidelity error, not one the validation refuses)."""
    bundled = load_catalog([])
    catalog = Catalog()
    for task_id in (TASK_A, TASK_B):
        scenario = bundled.scenario_of(task_id)
        tools = [tool.model_copy(update={"read_only": read_only(tool.name), "writes": None}) for tool in scenario.tools]
        catalog.scenarios[scenario.id] = scenario.model_copy(update={"tools": tools})
        catalog.tasks.update({task.id: task for task in bundled.tasks.values() if task.scenario == scenario.id})
    return catalog


@pytest.fixture(scope="module")
def replay(catalog: Catalog) -> ReplayWorld:
    return ReplayWorld(catalog)


def read_only(tool: str) -> bool:
    return tool.startswith(("get_", "list_", "recommend_"))


def simulator(replay: ReplayWorld, mutate: Mutation) -> str:
    """A scripted world model answering the golden step, changed by `mutate(tool, answer)`; repairs are answered
    faithfully."""
    def answer(messages: list[dict], request: dict) -> dict[str, Any] | str:
        golden = copy.deepcopy(replay(messages[:2], request))
        call = tracked_call(messages[1]["content"])
        assert call is not None
        return golden if len(messages) > 2 else mutate(call[0], golden)

    return scripted_model(answer)


async def check(catalog: Catalog, model: str) -> SimcheckReport:
    return await run_simcheck(catalog, select_checkable(catalog, f"{TASK_A},{TASK_B}"), WorldModel(model),
                              selection=f"{TASK_A},{TASK_B}", concurrency=3)


def rates(figures: FidelityFigures) -> dict[str, float | None]:
    return {name: getattr(figures, name).rate for name in FIGURES}


def records(observation: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The first top-level list of records in an observation."""
    return next((value for value in observation.values()
                 if isinstance(value, list) and value and all(isinstance(item, dict) for item in value)), None)


def fabricate(tool: str, answer: dict[str, Any]) -> dict[str, Any]:
    items = records(answer["observation"])
    if items is not None:
        invented = {key: (f"FAB-{index:06d}" if key == "id" or key.endswith("_id") else value)
                    for index, (key, value) in enumerate(items[0].items())}
        items.append(invented)
    return answer


def omit(tool: str, answer: dict[str, Any]) -> dict[str, Any]:
    items = records(answer["observation"])
    if items is not None and len(items) >= 2:
        items.pop()
    return answer


def shift_numbers(value: Any, key: str | None = None) -> Any:
    if isinstance(value, dict):
        return {name: shift_numbers(item, name) for name, item in value.items()}
    if isinstance(value, list):
        return [shift_numbers(item, key) for item in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not (key or "").endswith("_id"):
        return value + 1000
    return value


def change_values(tool: str, answer: dict[str, Any]) -> dict[str, Any]:
    return {**answer, "observation": shift_numbers(answer["observation"])}


def invent_field(tool: str, answer: dict[str, Any]) -> dict[str, Any]:
    answer["observation"]["confidence_note"] = "high"
    return answer


def wrong_patch(tool: str, answer: dict[str, Any]) -> dict[str, Any]:
    return answer if read_only(tool) else {**answer, "state_patch": [*answer["state_patch"], EXTRA]}


def write_when_reading(tool: str, answer: dict[str, Any]) -> dict[str, Any]:
    return {**answer, "state_patch": [*answer["state_patch"], EXTRA]} if read_only(tool) else answer


def invalid_first(tool: str, answer: dict[str, Any]) -> dict[str, Any]:
    return {"observation": "not an object", "state_patch": []}


async def test_a_faithful_simulator_scores_every_figure_full(catalog: Catalog, replay: ReplayWorld):
    report = await check(catalog, replay.model)

    assert report.task_count == 2 and report.overall.steps == 10 and report.overall.unavailable == 0
    assert all(rate == 1.0 for rate in rates(report.overall).values()), rates(report.overall)
    # Each check applied somewhere: the golden steps list entities, read state fields, write and read.
    overall = report.overall
    assert overall.entity_recall.total > 20 and overall.value_fields.total > 20
    assert overall.patch_agrees.total == 3 and overall.read_only_kept.total == 7
    assert [f.group for f in report.by_scenario] == ["chargeback-analyst", "emergency-dispatcher"]
    assert len(report.by_tool) == 10 and report.overall.faithful.ci is not None
    # The per-step audit agrees: no golden answer is flagged.
    assert (overall.audit_flagged.count, overall.audit_flagged.total) == (0, 10)


@pytest.mark.parametrize(("mutate", "lowered"), [
    (fabricate, {"grounded", "faithful"}),
    (omit, {"complete", "entity_recall", "faithful"}),
    (change_values, {"values_agree", "value_fields", "faithful"}),
    (invent_field, {"no_invented_fields", "faithful"}),
    (wrong_patch, {"patch_agrees", "faithful"}),
    (invalid_first, {"first_try"}),
], ids=lambda value: getattr(value, "__name__", ""))
async def test_each_kind_of_error_lowers_its_own_figure(catalog: Catalog, replay: ReplayWorld, mutate: Mutation,
                                                        lowered: set[str]):
    report = await check(catalog, simulator(replay, mutate))

    figures = rates(report.overall)
    assert {name for name, rate in figures.items() if rate != 1.0} == lowered, figures
    assert all(figures[name] is not None and figures[name] < 1.0 for name in lowered)


async def test_a_read_only_tool_that_writes_is_refused_and_repaired(catalog: Catalog, replay: ReplayWorld):
    """Tracked mode refuses a read-only tool's patch; the repaired (faithful) answer costs only the first try."""
    report = await check(catalog, simulator(replay, write_when_reading))

    figures = rates(report.overall)
    assert {name for name, rate in figures.items() if rate != 1.0} == {"first_try"}, figures
    assert report.overall.first_try.count == report.overall.steps - report.overall.read_only_kept.total
    assert all(step.attempts == 2 for step in report.steps if read_only(step.tool))


async def test_the_differences_are_named_step_by_step(catalog: Catalog, replay: ReplayWorld):
    report = await check(catalog, simulator(replay, fabricate))
    flagged = [step for step in report.steps if step.fidelity and step.fidelity.ungrounded]
    assert flagged and all(all(name.startswith("FAB-") for name in step.fidelity.ungrounded)
                           for step in flagged if step.fidelity)
    # The per-step audit catches the fabrications too, and flags no faithful step.
    assert all(any(flag.kind == "fabricated_entity" for flag in step.audit_flags) for step in flagged)
    assert report.overall.audit_flagged_faithful.count == 0



async def test_a_simulator_that_never_answers_validly_is_invalid_everywhere(catalog: Catalog, replay: ReplayWorld):
    model = scripted_model(lambda messages, request: {"observation": "not an object", "state_patch": []})
    report = await check(catalog, model)

    assert report.overall.valid.rate == 0.0 and report.overall.faithful.rate == 0.0
    assert report.overall.grounded.rate is None and report.overall.patch_agrees.rate is None
    assert all(step.status == "invalid" and step.attempts == 3 and "observation must be a JSON object" in step.error
               for step in report.steps if step.error)


def test_cli_prints_the_tables_and_writes_the_files(tmp_path: Path, replay: ReplayWorld,
                                                    capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "check"
    assert main(["simcheck", "--world-model", replay.model, "--tasks", TASK_A, "--out", str(out)]) == 0

    printed = capsys.readouterr().out
    assert "fidelity by scenario" in printed and "emergency-dispatcher" in printed
    assert "| emergency-dispatcher/dispatch_unit" not in printed and "emergency-dispatcher/dispatch_unit" in printed
    assert "5 steps of 1 task(s); faithful 100.0% (5/5)" in printed
    data = SimcheckReport.model_validate_json((out / "simcheck.json").read_text())
    assert data.overall.faithful.rate == 1.0 and len(data.steps) == 5
    markdown = (out / "simcheck.md").read_text()
    assert "## Fidelity by tool" in markdown and "| emergency-dispatcher/dispatch_unit | 1 | 100.0% (1/1) |" in markdown
    assert "<table>" in (out / "simcheck.html").read_text()


def test_cli_explains_bad_input(capsys: pytest.CaptureFixture[str], replay: ReplayWorld):
    assert main(["simcheck", "--world-model", replay.model, "--tasks", "no-such-task"]) == 2
    assert "no task matches 'no-such-task'" in capsys.readouterr().err
    assert main(["simcheck", "--world-model", replay.model, "--concurrency", "0"]) == 2
    assert "--concurrency must be at least 1" in capsys.readouterr().err
    assert main(["simcheck", "--source", "/no/such/folder", "--world-model", replay.model]) in (1, 2)
    assert capsys.readouterr().err


def test_help_teaches_the_figures(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        main(["simcheck", "--help"])
    text = capsys.readouterr().out
    assert "golden state" in text and "grounded" in text and "examples:" in text and "--selftest" in text


def test_selftest_prints_the_audit_accuracy(capsys: pytest.CaptureFixture[str]):
    assert main(["simcheck", "--selftest"]) == 0

    out = capsys.readouterr().out
    match = re.fullmatch(r"recall: (\d+\.\d) %\nfalse alarms: (\d+\.\d) %\n", out)
    assert match, out
    assert float(match[1]) >= 95.0 and float(match[2]) <= 5.0


def test_the_json_report_is_one_model(tmp_path: Path):
    schema = SimcheckReport.model_json_schema()
    assert {"overall", "by_scenario", "by_tool", "steps"} <= set(schema["properties"])
    json.dumps(schema)
