"""Fault schedules (deterministic, never the first call, transient) and E1/E2/E3/prompt behaviour in episodes."""

from __future__ import annotations

import random

import pytest
from runtime_kit import PATIENT, TriageModel, sqlite_store_fixture, start_episode  # noqa: F401

from occusim.environments import FaultSettings
from occusim.server import FaultSchedule
from occusim.server._advertised import advertised_validator
from occusim.server._degrade import _DEGRADERS, degrade, explicit_error


def _windows(schedule: FaultSchedule) -> list[tuple[int, int, str, str]]:
    return [(w.start, w.stop, w.kind, w.label) for w in schedule.windows]


def test_same_seed_gives_the_same_schedule_and_different_seeds_differ():
    settings = FaultSettings(mode="E3", count=2, duration=2, seed=7)
    first = FaultSchedule(settings, task_id="triage-desk/chest-pain", horizon=12)
    again = FaultSchedule(settings.model_copy(), task_id="triage-desk/chest-pain", horizon=12)
    assert _windows(first) == _windows(again)

    layouts = {
        tuple(_windows(FaultSchedule(FaultSettings(mode="E3", seed=seed), task_id="t", horizon=12)))
        for seed in range(10)
    }
    assert len(layouts) >= 5
    other_task = FaultSchedule(settings, task_id="triage-desk/short", horizon=12)
    assert _windows(other_task) != _windows(first)


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize(("count", "duration", "horizon"), [(2, 2, 10), (3, 1, 6), (2, 3, 4), (1, 5, 30)])
def test_windows_skip_the_first_call_do_not_overlap_and_spread_out(seed, count, duration, horizon):
    schedule = FaultSchedule(FaultSettings(mode="E1", count=count, duration=duration, seed=seed),
                             task_id="t", horizon=horizon)

    assert len(schedule.windows) == count
    assert schedule.at(0) is None
    covered = [i for i in range(schedule.horizon + 5) if schedule.at(i) is not None]
    assert len(covered) == count * duration
    for number, window in enumerate(schedule.windows):
        assert window.stop - window.start == duration
        assert 1 <= window.start and window.stop <= schedule.horizon
        # One window per equal segment of the horizon.
        segment = (schedule.horizon - 1) / count
        assert 1 + int(segment * number) <= window.start
        # The call after each window is clean.
        assert schedule.at(window.stop) is None


def test_modes_choose_kinds_and_labels():
    e1 = FaultSchedule(FaultSettings(mode="E1", count=4, duration=1, seed=1), task_id="t", horizon=20)
    e2 = FaultSchedule(FaultSettings(mode="E2", count=4, duration=1, seed=1), task_id="t", horizon=20)
    assert {w.kind for w in e1.windows} == {"explicit"}
    assert {w.label for w in e1.windows} <= {"http_500", "timeout", "connection_refused", "service_unavailable"}
    assert {w.kind for w in e2.windows} == {"implicit"}
    assert {w.label for w in e2.windows} <= {"truncate_list", "drop_fields", "null_fields", "stale"}
    for seed in range(6):
        e3 = FaultSchedule(FaultSettings(mode="E3", count=4, duration=1, seed=seed), task_id="t", horizon=20)
        kinds = [w.kind for w in e3.windows]
        assert kinds[0] != kinds[1] and kinds[1] != kinds[2] and kinds[2] != kinds[3]
    for mode in ("E0", "prompt"):
        assert FaultSchedule(FaultSettings(mode=mode), task_id="t").windows == ()
    assert FaultSchedule(FaultSettings(mode="E1", count=0), task_id="t").windows == ()


async def test_e1_errors_skip_the_model_keep_the_state_and_are_transient(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model, faults=FaultSettings(mode="E1", count=2, duration=2, seed=5))
    schedule = episode.schedule
    assert len(schedule.windows) == 2

    for index in range(schedule.windows[-1].stop + 1):
        calls_before = model.calls
        state_before = episode.state
        outcome = await episode.step("set_priority", {"patient_id": "P2", "priority": 1 + index % 5})
        planned = schedule.at(index)
        if planned is None:
            assert not outcome.is_error and outcome.record.fault is None
            assert model.calls == calls_before + 1
            assert episode.state["patients"][1]["priority"] == 1 + index % 5
        else:
            assert model.calls == calls_before
            assert outcome.is_error
            assert outcome.observation["error"]["message"]
            assert outcome.observation["error"]["type"] in ("http_error", "timeout", "connection_error")
            assert outcome.record.fault.kind == "explicit" and outcome.record.fault.label == planned.label
            assert outcome.record.true_observation is None
            assert episode.state == state_before

    # The call right after each window succeeds.
    for window in schedule.windows:
        assert episode.record.steps[window.stop].fault is None
        assert not episode.record.steps[window.stop].is_error
    stored = await sqlite_store.load_episode(episode.id)
    assert [s.fault for s in stored.steps] == [s.fault for s in episode.record.steps]


async def test_e2_applies_the_true_patch_but_shows_a_degraded_observation(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model, faults=FaultSettings(mode="E2", count=2, duration=2, seed=11))
    schedule = episode.schedule

    degraded = 0
    for index in range(schedule.windows[-1].stop + 1):
        outcome = await episode.step("set_priority", {"patient_id": "P1", "priority": 1 + index % 5})
        # The true state change happens whatever the agent is shown.
        assert episode.state["patients"][0]["priority"] == 1 + index % 5
        assert model.calls == index + 1
        if schedule.at(index) is None:
            assert outcome.record.fault is None and outcome.record.true_observation is None
        else:
            degraded += 1
            fault = outcome.record.fault
            assert fault.kind == "implicit"
            # Every field of set_priority is required, so only a stale answer can degrade it.
            assert fault.label == "stale"
            assert outcome.record.true_observation == {"ok": True, "patient_id": "P1", "priority": 1 + index % 5}
            assert outcome.observation == episode.record.steps[index - 1].true_observation or \
                outcome.observation == episode.record.steps[index - 1].observation
            assert outcome.observation != outcome.record.true_observation
    assert degraded == 4
    stored = await sqlite_store.load_episode(episode.id)
    faulted = [s for s in stored.steps if s.fault]
    assert len(faulted) == 4 and all(s.true_observation for s in faulted)


async def test_e3_mixes_explicit_and_implicit_faults(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model, faults=FaultSettings(mode="E3", count=2, duration=1, seed=2))
    for _ in range(episode.schedule.windows[-1].stop):
        await episode.step("list_patients", {})
    kinds = [s.fault.kind for s in episode.record.steps if s.fault]
    assert sorted(kinds) == ["explicit", "implicit"]


async def test_prompt_mode_puts_fault_rules_in_the_prompt_and_injects_nothing(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model, faults=FaultSettings(mode="prompt", count=3, duration=2))
    for _ in range(6):
        outcome = await episode.step("list_patients", {})
        assert outcome.record.fault is None and not outcome.is_error
    system = model.requests[0][0][0]["content"]
    assert "### Fault injection" in system
    assert "exactly 3 faults" in system and "2 consecutive tool calls" in system
    assert model.calls == 6

    clean = TriageModel()
    plain = await start_episode(sqlite_store, clean)
    await plain.step("list_patients", {})
    assert "Fault injection" not in clean.requests[0][0][0]["content"]


async def test_history_mode_prompt_faults_are_appended_to_the_verbatim_prompt(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model, mode="history", faults=FaultSettings(mode="prompt"))
    await episode.step("list_patients", {})
    assert model.requests[0][0][0]["content"].endswith("Never say that a fault was injected.")


def test_explicit_error_envelopes():
    for label in ("http_500", "timeout", "connection_refused", "service_unavailable"):
        observation, fault = explicit_error(label, "get_patient")
        assert set(observation) == {"error"}
        assert "get_patient" in observation["error"]["message"]
        assert fault.kind == "explicit" and fault.label == label and fault.detail
    assert explicit_error("http_500", "x")[0]["error"]["status"] == 500


LISTING = {"patients": [{"id": f"P{i}", "name": f"N{i}", "priority": 3} for i in range(1, 6)], "count": 5}
LISTING_SCHEMA = {"type": "object", "properties": {"patients": {"type": "array", "items": PATIENT}},
                  "required": ["patients"]}
RECORD = {"id": "P1", "name": "Ana Ruiz", "priority": 3, "notes": "chest pain", "ward": "A"}


@pytest.mark.parametrize("seed", range(10))
def test_truncate_list_keeps_one_or_two_items(seed):
    shown, fault = degrade(LISTING, "truncate_list", output_schema=LISTING_SCHEMA, previous=None,
                           rng=random.Random(seed))
    assert fault.label == "truncate_list" and fault.detail.startswith("/patients: 5 -> ")
    assert 1 <= len(shown["patients"]) <= 2
    assert shown["patients"] == LISTING["patients"][: len(shown["patients"])]
    assert shown["count"] == 5 and len(LISTING["patients"]) == 5


@pytest.mark.parametrize("seed", range(10))
def test_drop_and_null_fields_spare_required_fields(seed):
    dropped, fault = degrade(RECORD, "drop_fields", output_schema=PATIENT, previous=None, rng=random.Random(seed))
    assert fault.label == "drop_fields"
    assert {"id", "name", "priority"} <= set(dropped) < set(RECORD)

    nulled, fault = degrade(RECORD, "null_fields", output_schema=PATIENT, previous=None, rng=random.Random(seed))
    assert fault.label == "null_fields"
    assert set(nulled) == set(RECORD)
    assert {k for k, v in nulled.items() if v is None} and {k for k, v in nulled.items() if v is None} <= {
        "notes", "ward"}


def test_without_a_schema_identifiers_are_kept():
    plain = {"patient_id": "P1", "status": "waiting", "bed": 4}
    shown, fault = degrade(plain, "drop_fields", output_schema=None, previous=None, rng=random.Random(0))
    assert shown["patient_id"] == "P1" and len(shown) < len(plain)


def test_stale_repeats_the_previous_answer_and_labels_fall_back():
    earlier = {**RECORD, "priority": 4}
    shown, fault = degrade(RECORD, "stale", output_schema=PATIENT, previous=earlier, rng=random.Random(0))
    assert fault.label == "stale" and shown == earlier

    # No earlier answer: the next applicable degradation is used instead.
    shown, fault = degrade(RECORD, "stale", output_schema=PATIENT, previous=None, rng=random.Random(0))
    assert fault.label in ("drop_fields", "null_fields") and shown != RECORD
    shown, fault = degrade(RECORD, "truncate_list", output_schema=PATIENT, previous=None, rng=random.Random(0))
    assert fault.label == "drop_fields"

    assert degrade({}, "truncate_list", output_schema=None, previous=None, rng=random.Random(0)) is None


def test_degradation_choices_are_reproducible():
    picks = {
        repr(degrade(RECORD, "drop_fields", output_schema=PATIENT, previous=None, rng=random.Random(3)))
        for _ in range(5)
    }
    assert len(picks) == 1


def test_a_field_inside_a_dropped_one_is_skipped_without_raising():
    # Without a schema both /units and /units/0/eta_min may go; once /units is gone the other has no parent.
    observation = {"incident_id": "I1", "units": [{"unit_id": "U1", "eta_min": 4}]}
    shown, fault = degrade(observation, "drop_fields", output_schema=None, previous=None, rng=random.Random(0))
    assert fault.label == "drop_fields" and fault.detail == "dropped /units"
    assert shown == {"incident_id": "I1"}
    assert observation["units"] == [{"unit_id": "U1", "eta_min": 4}]


def test_a_degradation_that_breaks_falls_back_to_the_next(monkeypatch):
    def broken(*args):
        raise KeyError("unexpected shape")

    monkeypatch.setitem(_DEGRADERS, "truncate_list", broken)
    shown, fault = degrade(LISTING, "truncate_list", output_schema=LISTING_SCHEMA, previous=None,
                           rng=random.Random(0))
    assert fault.label == "drop_fields" and shown != LISTING


DISPATCH_SCHEMA = {
    "$defs": {"unit": {"type": "object", "required": ["unit_id", "type"],
                       "properties": {"unit_id": {"type": "string"}, "type": {"type": "string"},
                                      "eta_min": {"type": "integer"}}}},
    "type": "object",
    "allOf": [{"required": ["incident_id"]}],
    "properties": {
        "incident_id": {"type": "string"},
        "note": {"type": "string"},
        "units": {"type": "array", "items": {"$ref": "#/$defs/unit"}},
        "caller": {"oneOf": [{"type": "object", "required": ["name"], "properties": {"name": {}, "phone": {}}},
                             {"type": "string"}]},
        "extra": {"type": "object"},
    },
}
DISPATCH = {"incident_id": "I1", "note": "n", "units": [{"unit_id": "U1", "type": "ALS", "eta_min": 4}],
            "caller": {"name": "Ana", "phone": "555"}, "extra": {"free": "form"}}


def test_only_fields_optional_at_their_own_level_are_dropped_through_references_and_combinators():
    advertised = advertised_validator(DISPATCH_SCHEMA)
    dropped, nulled = set(), set()
    for seed in range(40):
        shown, fault = degrade(DISPATCH, "drop_fields", output_schema=DISPATCH_SCHEMA, previous=None,
                               rng=random.Random(seed))
        assert fault.label == "drop_fields" and advertised.is_valid(shown)
        dropped.update(fault.detail.removeprefix("dropped ").split(", "))
        shown, fault = degrade(DISPATCH, "null_fields", output_schema=DISPATCH_SCHEMA, previous=None,
                               rng=random.Random(seed))
        assert fault.label == "null_fields" and advertised.is_valid(shown)
        nulled.update(fault.detail.removeprefix("nulled ").split(", "))
    # Required: incident_id (allOf), unit_id and type ($ref), caller name (the oneOf branch that fits);
    # nothing inside `extra`, whose fields the schema does not describe.
    assert dropped == {"/note", "/units", "/caller", "/extra", "/units/0/eta_min", "/caller/phone"}
    assert nulled == {"/note", "/units/0/eta_min", "/caller/phone"}


def test_an_answer_the_schema_does_not_describe_loses_no_field():
    # An error envelope outside the declared schema: no field is known to be optional, a list may still be cut.
    answer = {"error": {"code": "NOT_FOUND", "message": "no unit U9"}, "units": ["U1", "U2", "U3"]}
    shown, fault = degrade(answer, "drop_fields", output_schema=DISPATCH_SCHEMA, previous=None,
                           rng=random.Random(0))
    assert fault.label == "truncate_list" and shown["error"] == answer["error"]
