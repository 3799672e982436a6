"""The per-step audit in episodes: scripted world models that make each kind of error are flagged, the
faithful one is not, tracked mode repairs what it enforces, and flags survive the store."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from occusim.environments import FlagKind, Task, apply_json_patch, load_catalog
from occusim.llm import scripted_model
from occusim.server import EpisodeService, Store, audit_step, run_audit_selftest
from tests.helpers import POSTGRES_URL, drop_schema, golden_world, play

CATALOG = load_catalog()
TASK = CATALOG.tasks["triage-nurse/low-acuity-resource-count"]
Answer = dict[str, Any]


def world(task: Task, change: Callable[[int, Answer], list[Answer]] | None = None, name: str = "w") -> str:
    """Answers the n-th call with the n-th golden step; `change(n, golden)` may give other answers first."""
    return golden_world(task, name=name, change=change)


@pytest.fixture
def service(sqlite_store: Store) -> EpisodeService:
    return EpisodeService(CATALOG, sqlite_store)


async def replay(service: EpisodeService, model: str) -> list[Any]:
    episode = await service.create(TASK.id, world_model=model)
    await play(episode, TASK.reference_solution, allow_errors=True)
    record = await service.store.load_episode(episode.id)
    assert record is not None
    return record.steps


async def test_the_faithful_world_model_earns_no_flag(service):
    steps = await replay(service, world(TASK, name="faithful"))
    assert [s.flags for s in steps] == [[] for _ in TASK.reference_solution]


def _replace(index: int, mutate: Callable[[Answer], None]) -> Callable[[int, Answer], list[Answer]]:
    """Instead of the golden answer at call `index`, the golden answer changed by `mutate` (recorded as is)."""
    def change(at: int, golden: Answer) -> list[Answer]:
        if at != index:
            return []
        mutate(golden)
        return []
    return change


def _fabricate(answer: Answer) -> None:
    answer["observation"]["patient_id"] = "P-7310"


def _invent(answer: Answer) -> None:
    answer["observation"]["insurance_tier"] = "gold"


def _misreport(answer: Answer) -> None:
    answer["observation"]["name"] = answer["observation"]["name"] + " Jr"


def _drop_bed(answer: Answer) -> None:
    answer["observation"]["beds"].pop(4)  # A3: an open acute bed like the listed ones


def _contradict(answer: Answer) -> None:
    # The observation says the patient is in bed; the patch now leaves them in the waiting room.
    for op in answer["state_patch"]:
        if op["path"] == "/patients/P-2041/status":
            op["value"] = "waiting_room"


@pytest.mark.parametrize(("index", "mutate", "kind"), [
    (0, _fabricate, FlagKind.fabricated_entity),
    (0, _invent, FlagKind.invented_field),
    (0, _misreport, FlagKind.value_mismatch),
    (8, _drop_bed, FlagKind.omission),
    (9, _contradict, FlagKind.patch_contradiction),
], ids=["fabricated", "invented", "misreported", "omitted", "contradicted"])
async def test_each_kind_of_error_is_flagged_on_its_step(service, index, mutate, kind):
    steps = await replay(service, world(TASK, _replace(index, mutate), name=f"bad-{kind}"))
    flagged = {i: [f.kind for f in s.flags] for i, s in enumerate(steps) if s.flags}
    assert list(flagged) == [index]
    assert kind in flagged[index]


async def test_a_read_only_tool_that_changes_the_state_is_sent_back_and_repaired(service):
    def delete_log(at: int, golden: Answer) -> list[Answer]:
        bad = copy.deepcopy(golden)
        bad["state_patch"] = [{"op": "remove", "path": "/patients/P-2041/alerts"}]
        return [bad] if at == 0 else []

    episode = await service.create(TASK.id, world_model=world(TASK, delete_log, name="ro"))
    first = TASK.reference_solution[0]
    outcome = await episode.step(first.tool, first.arguments)
    assert outcome.observation == first.observation
    assert outcome.record.state_patch == []
    assert outcome.record.usage.calls == 2
    assert "alerts" in episode.record.state["patients"]["P-2041"]


async def test_a_write_outside_the_tools_paths_is_sent_back(service):
    def write_beds(at: int, golden: Answer) -> list[Answer]:
        bad = copy.deepcopy(golden)
        bad["state_patch"] = [*bad["state_patch"], {"op": "replace", "path": "/ed/now", "value": "later"}]
        return [bad] if at == 1 else []

    episode = await service.create(TASK.id, world_model=world(TASK, write_beds, name="oob"))
    for step in TASK.reference_solution[:2]:
        outcome = await episode.step(step.tool, step.arguments)
    assert outcome.record.usage.calls == 2
    assert episode.record.state["ed"]["now"] != "later"


def _not_found(at: int, golden: Answer) -> list[Answer]:
    bad = {"observation": {"error": {"type": "not_found", "message": "patient P-2041 not found"}}, "state_patch": []}
    return [bad] if at == 0 else []


def _lost_patch(at: int, golden: Answer) -> list[Answer]:
    return [{**copy.deepcopy(golden), "state_patch": []}] if at == 9 else []


def _other_bed(at: int, golden: Answer) -> list[Answer]:
    if at != 9:
        return []
    bad = copy.deepcopy(golden)
    for op in bad["state_patch"]:
        op["path"] = op["path"].replace("/beds/FT-3/", "/beds/FT-1/")
    return [bad]


@pytest.mark.parametrize(("change", "kind"), [
    (_not_found, FlagKind.error_contradiction),
    (_lost_patch, FlagKind.unrecorded_write),
    (_other_bed, FlagKind.wrong_record),
], ids=["not-found", "lost-patch", "other-bed"])
async def test_answers_the_state_proves_wrong_are_sent_back(service, change, kind):
    assert "FT-1" in CATALOG.initial_state(TASK)["beds"]
    bad_first: list[str] = []

    def recording(at: int, golden: Answer) -> list[Answer]:
        answers = change(at, golden)
        bad_first.extend(kind for _ in answers)
        return answers

    episode = await service.create(TASK.id, world_model=world(TASK, recording, name=f"repair-{kind}"))
    steps = TASK.reference_solution[:10]
    for step in steps:
        outcome = await episode.step(step.tool, step.arguments)
        assert outcome.observation == step.observation
        assert outcome.record.state_patch == step.state_patch
        assert kind not in {flag.kind for flag in outcome.record.flags}
    assert bad_first == [kind]
    assert episode.record.state["beds"]["FT-3"]["patient_id"] == "P-2041"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store_at(request, tmp_path: Path):
    """A fresh SQLite file, or a fresh schema on the PostgreSQL server (dropped after)."""
    if request.param == "sqlite":
        yield Store(f"sqlite+aiosqlite:///{tmp_path / 'e.db'}")
        return
    schema = f"occusim_test_{uuid.uuid4().hex[:12]}"
    yield Store(POSTGRES_URL, schema=schema)
    await drop_schema(schema)


async def test_flags_survive_the_store(store_at: Store):
    await store_at.init()
    service = EpisodeService(CATALOG, store_at)
    try:
        steps = await replay(service, world(TASK, _replace(0, _fabricate), name=f"store-{store_at.url[:6]}"))
    finally:
        await store_at.close()
    assert steps[0].flags[0].kind == FlagKind.fabricated_entity
    assert steps[0].flags[0].path == "/patient_id"
    assert "P-7310" in steps[0].flags[0].detail
    assert all(not step.flags for step in steps[1:])


def test_the_audit_catches_mutated_reference_steps_and_spares_the_golden_ones():
    result = run_audit_selftest(seed=0, catalog=CATALOG)
    assert result.steps >= 300
    assert result.recall >= 0.95, result.by_mutation
    assert result.false_alarm_rate <= 0.03, result.by_probe
    assert result.false_alarms <= 0.02 * result.golden
    assert set(result.by_mutation) >= {"not_found_existing", "success_without_patch", "wrong_record_patch",
                                       "contradict_added_record", "swap_entity", "drop_list_item",
                                       "misderive_field", "misderive_held_field"}
    for kind in ("drop_list_item", "misderive_held_field"):
        assert result.by_mutation[kind].caught >= 0.9 * result.by_mutation[kind].steps, kind
    assert set(result.by_probe) == {"whitespace", "iso_variant", "key_order", "float_noise", "narrowed_filter"}
    assert all(tally.steps > 0 for tally in [*result.by_mutation.values(), *result.by_probe.values()])


async def test_history_mode_runs_only_the_checks_that_need_no_state(service):
    def history_world(messages: list[dict], request: dict) -> Answer:
        observation = copy.deepcopy(TASK.reference_solution[0].observation)
        observation["weight_kg"] = 61  # differs from the state: not checked without one
        observation["bed_id"] = "FT-77"  # an id nothing holds: checked against the initial state
        return observation

    episode = await service.create(TASK.id, world_model=scripted_model(history_world, name="hist"), mode="history")
    first = TASK.reference_solution[0]
    outcome = await episode.step(first.tool, first.arguments)
    assert [(f.kind, f.path) for f in outcome.record.flags] == [(FlagKind.fabricated_entity, "/bed_id")]


def _audit_first_step(observation: Any, patch: list[dict[str, Any]] | None = None) -> list[FlagKind]:
    scenario = CATALOG.scenario_of(TASK)
    step = TASK.reference_solution[0]
    tool = scenario.tool(step.tool)
    assert tool is not None
    state = CATALOG.initial_state(TASK)
    return [flag.kind for flag in audit_step(scenario, tool, step.arguments, state_before=state,
                                             observation=observation, patch=patch or [], state_after=state)]


def test_an_injected_transport_failure_is_not_read_as_a_claim_about_the_records():
    assert _audit_first_step({"error": {"type": "http_error", "status": 404, "message": "Not Found"}}) == []
    assert _audit_first_step({"error": {"type": "timeout", "message": "no such luck: timed out"}}) == []


def test_an_error_that_reports_success_or_misses_an_existing_record_is_flagged():
    assert _audit_first_step({"error": "Unknown patient P-2041"}) == [FlagKind.error_contradiction]
    assert _audit_first_step({"error": {"type": "tool_error", "message": "rejected"}, "success": True}) == \
        [FlagKind.error_contradiction]
    # A record the state does not hold may well be missing.
    assert _audit_first_step({"error": "Unknown patient P-9999"}) == []


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
                     max_leaves=16)


@settings(max_examples=150, deadline=None)
@given(observation=st.dictionaries(st.sampled_from(["patient_id", "bed_id", "status", "error", "success", "beds",
                                                    "name", "arrival_time"]), _JSON, max_size=5),
       written=_JSON)
def test_any_answer_is_audited_without_raising(observation, written):
    scenario = CATALOG.scenario_of(TASK)
    step = TASK.reference_solution[9]
    tool = scenario.tool(step.tool)
    assert tool is not None
    state = CATALOG.initial_state(TASK)
    patch = [{"op": "replace", "path": "/beds/FT-3/status", "value": written}]
    flags = audit_step(scenario, tool, step.arguments, state_before=state, observation=observation, patch=patch,
                       state_after={**state, "beds": {**state["beds"], "FT-3": {**state["beds"]["FT-3"],
                                                                                 "status": written}}})
    assert all(flag.detail for flag in flags)


def test_a_derived_field_the_scenario_declares_is_checked_against_its_formula():
    # ap-invoice-clerk declares /invoices total = subtotal + freight. A world model that writes a wrong
    # total to the state and reports the same one copies the state faithfully, yet breaks the formula.
    scenario = CATALOG.scenarios["ap-invoice-clerk"]
    task = next(t for t in scenario.tasks if t.reference_solution[0].tool == "get_invoice")
    step = task.reference_solution[0]
    tool = scenario.tool("get_invoice")
    assert tool is not None
    state = CATALOG.initial_state(task)
    invoice_id = step.arguments["invoice_id"]
    observation = copy.deepcopy(step.observation)
    wrong = observation["invoice"]["subtotal"] + observation["invoice"]["freight"] + 120.0
    observation["invoice"]["total"] = wrong
    after = copy.deepcopy(state)
    after["invoices"][invoice_id]["total"] = wrong

    def audited(seen: Any, held: dict[str, Any]) -> list[tuple[FlagKind, str | None]]:
        return [(f.kind, f.path) for f in audit_step(scenario, tool, step.arguments, state_before=held,
                                                     observation=seen, patch=[], state_after=held)]

    assert audited(observation, after) == [(FlagKind.value_mismatch, "/invoice/total")]
    assert audited(step.observation, state) == []


def _reference_step(task_id: str, position: int) -> tuple[Any, Any, dict[str, Any], Any]:
    """The scenario, tool, state before and reference step at `position` of a bundled task."""
    task = CATALOG.tasks[task_id]
    scenario = CATALOG.scenario_of(task)
    state = CATALOG.initial_state(task)
    for step in task.reference_solution[:position]:
        state = apply_json_patch(state, step.state_patch)
    step = task.reference_solution[position]
    return scenario, scenario.tool(step.tool), state, step


def _audit_dropped(task_id: str, position: int, listed: str, keep: Callable[[dict[str, Any]], bool]) -> list[Any]:
    scenario, tool, state, step = _reference_step(task_id, position)
    observation = copy.deepcopy(step.observation)
    rows = observation[listed]
    observation[listed] = [row for row in rows if keep(row)]
    assert 0 < len(observation[listed]) < len(rows)
    return audit_step(scenario, tool, step.arguments, state_before=state, observation=observation,
                      patch=step.state_patch, state_after=apply_json_patch(state, step.state_patch))


def test_a_row_left_out_of_a_list_the_state_holds_is_flagged_though_its_rows_name_other_records():
    # Transcript rows name courses of the catalogue; the list they copy is the student's transcript.
    flags = _audit_dropped("university-registrar/graduation-credit-shortfall", 2, "institutional",
                           lambda row: not (row["course"] == "PHIL-201" and row["term"] == "2021FA"))
    assert [f.kind for f in flags] == [FlagKind.omission]
    assert flags[0].path == "/institutional"


def test_a_record_the_calls_own_filter_arguments_select_must_be_listed():
    # parameter=NH3-N and the date range select the first sample of the range; no attribute the listed
    # ones share tells it apart, so leaving it out is an omission, not a narrower date range.
    flags = _audit_dropped("discharge-compliance-officer/ammonia-24-hour-notice", 1, "results",
                           lambda row: row["sample_id"] != "NH-250801")
    assert [f.kind for f in flags] == [FlagKind.omission]
    assert "NH-250801" in flags[0].detail


def test_a_left_out_record_another_text_field_sets_apart_is_not_called_missing():
    # The one grab sample at another location may be outside what the tool lists: not certain, not flagged.
    assert _audit_dropped("discharge-compliance-officer/ammonia-24-hour-notice", 1, "results",
                          lambda row: row["sample_id"] != "PC-250812") == []


def test_fields_that_tell_each_listed_record_apart_do_not_make_a_filter():
    # status=answered selects three queries. The two listed have forms of their own (VISIT, LAB) and the
    # left-out one another (HBA1C): that is what tells records apart, not a category the tool selects on.
    flags = _audit_dropped("clinical-data-manager/answered-query-review", 0, "queries",
                           lambda row: row["query_id"] != "Q-1041")
    assert [f.kind for f in flags] == [FlagKind.omission]
    assert "Q-1041" in flags[0].detail


def test_a_closed_date_range_selects_every_record_within_it():
    # No argument names a field of the audit log, but from and to do: the first entry of the window is
    # within it, though the listed ones span a narrower range.
    flags = _audit_dropped("database-administrator/pitr-after-bad-delete", 0, "entries",
                           lambda row: row["ts"] != "2025-06-18T14:01:12.004Z")
    assert [f.kind for f in flags] == [FlagKind.omission]


def test_the_date_the_tools_description_names_is_the_one_a_range_selects_on():
    # get_lab_results lists results "collected in a date range": a sample collected on 30 September and
    # reported on 1 October belongs to a September range.
    flags = _audit_dropped("discharge-compliance-officer/september-tss-ecoli-dmr", 2, "results",
                           lambda row: row["sample_id"] != "EC-250930")
    assert [f.kind for f in flags] == [FlagKind.omission]
    assert "EC-250930" in flags[0].detail


def test_a_left_out_record_a_category_sets_apart_is_not_called_missing():
    # The three listed backups are all `ok`, the left-out one `failed`: a tool listing usable backups only
    # reads the same as one that dropped it.
    assert _audit_dropped("database-administrator/pitr-after-bad-delete", 1, "backups",
                          lambda row: row["status"] != "failed") == []


def test_the_golden_filtered_lists_are_not_read_as_omissions():
    for task_id, position in [("discharge-compliance-officer/ammonia-24-hour-notice", 1),
                              ("discharge-compliance-officer/ammonia-24-hour-notice", 2),
                              ("university-registrar/graduation-credit-shortfall", 2)]:
        scenario, tool, state, step = _reference_step(task_id, position)
        flags = audit_step(scenario, tool, step.arguments, state_before=state, observation=step.observation,
                           patch=step.state_patch, state_after=apply_json_patch(state, step.state_patch))
        assert flags == [], (task_id, flags)
