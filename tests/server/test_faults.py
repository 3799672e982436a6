"""Fault schedules (deterministic, never the first call, transient, met by every episode long enough) and
E1/E2/E3/prompt behaviour in episodes."""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from occusim.environments import FaultSettings, InjectedFault, StepRecord
from occusim.server import FaultSchedule
from occusim.server._advertised import advertised_validator
from occusim.server._degrade import _DEGRADERS, degrade, explicit_error
from tests.helpers import PATIENT, TriageModel, start_episode


def play(schedule: FaultSchedule, calls: int, carries=lambda index: True) -> list[StepRecord]:
    """The steps of an episode of `calls` calls, where call i can carry its fault when `carries(i)`."""
    steps: list[StepRecord] = []
    for index in range(calls):
        planned = schedule.next_fault(steps)
        step = StepRecord(index=index, tool="t", observation={})
        if planned is not None and carries(index):
            step.fault = InjectedFault(kind=planned.kind, label=planned.label, detail=str(planned.number))
        steps.append(step)
    return steps


def faulted(steps: list[StepRecord]) -> list[int]:
    return [step.index for step in steps if step.fault is not None]


def starts(steps: list[StepRecord]) -> list[int]:
    """The call each fault started on."""
    seen: list[int] = []
    for step in steps:
        if step.fault is not None and (not seen or steps[seen[-1]].fault.detail != step.fault.detail):
            seen.append(step.index)
    return seen


def test_same_seed_gives_the_same_plan_and_seeds_vary_kinds_and_labels():
    settings_ = FaultSettings(mode="E3", count=2, duration=2, seed=7)
    first = FaultSchedule(settings_, task_id="triage-desk/chest-pain")
    again = FaultSchedule(settings_.model_copy(), task_id="triage-desk/chest-pain")
    assert first.faults == again.faults
    assert faulted(play(first, 12)) == faulted(play(again, 12))
    assert [f.start for f in first.faults] == starts(play(first, 12))

    plans = {FaultSchedule(FaultSettings(mode="E3", count=4, seed=seed), task_id="t").faults for seed in range(10)}
    assert len(plans) >= 5
    assert {plan[0].kind for plan in plans} == {"explicit", "implicit"}


def test_e1_schedules_differ_across_seeds_over_a_40_call_episode():
    schedules = {tuple(faulted(play(FaultSchedule(FaultSettings(mode="E1", count=2, duration=2, seed=seed, window=40),
                                                  task_id="t"), 40)))
                 for seed in range(1, 6)}
    assert len(schedules) == 5
    # Trials of a run have their own seeds, so they differ too; a task of its own draws its own places.
    by_task = {tuple(faulted(play(FaultSchedule(FaultSettings(mode="E1", seed=1, window=40), task_id=task), 40)))
               for task in ("a", "b", "c", "d")}
    assert len(by_task) > 1


def test_modes_choose_kinds_and_labels():
    e1 = FaultSchedule(FaultSettings(mode="E1", count=4, duration=1, seed=1), task_id="t")
    e2 = FaultSchedule(FaultSettings(mode="E2", count=4, duration=1, seed=1), task_id="t")
    assert {f.kind for f in e1.faults} == {"explicit"}
    assert {f.label for f in e1.faults} <= {"http_500", "timeout", "connection_refused", "service_unavailable"}
    assert {f.kind for f in e2.faults} == {"implicit"}
    assert {f.label for f in e2.faults} <= {"truncate_list", "drop_fields", "null_fields", "stale"}
    for seed in range(6):
        e3 = FaultSchedule(FaultSettings(mode="E3", count=4, duration=1, seed=seed), task_id="t")
        kinds = [f.kind for f in e3.faults]
        assert kinds[0] != kinds[1] and kinds[1] != kinds[2] and kinds[2] != kinds[3]
    for mode in ("E0", "prompt"):
        schedule = FaultSchedule(FaultSettings(mode=mode), task_id="t")
        assert schedule.faults == () and schedule.calls_needed == 0 and faulted(play(schedule, 20)) == []
        assert schedule.tally(play(schedule, 20)) == (tally := schedule.tally([])) and not tally.too_short
    assert FaultSchedule(FaultSettings(mode="E1", count=0), task_id="t").faults == ()


@pytest.mark.parametrize(("count", "duration", "window"), [(2, 2, None), (2, 2, 20), (3, 1, 9), (1, 3, None), (4, 2, 40)])
def test_over_2000_seeds_each_start_covers_its_range_and_the_guarantee_holds(count, duration, window):
    needed = count * (duration + 1)
    width = max(window or 0, 2 * needed)
    seen: list[set[int]] = [set() for _ in range(count)]
    for seed in range(2000):
        schedule = FaultSchedule(FaultSettings(mode="E3", count=count, duration=duration, seed=seed, window=window),
                                 task_id="t")
        assert schedule.window == width
        steps = play(schedule, width)
        # The guarantee: an episode as long as the window meets every fault in full, at the drawn places.
        assert schedule.tally(steps).met == count and len(faulted(steps)) == count * duration
        assert starts(steps) == [fault.start for fault in schedule.faults]
        hits = faulted(steps)
        assert hits[0] >= 1 and hits[-1] <= width - 1
        for fault, start in zip(schedule.faults, starts(steps), strict=True):
            seen[fault.number].add(start)
    # Calls 1 .. width - 1 are cut into `count` equal stretches; fault k is drawn at every place of stretch k
    # that leaves its last call clean (the last fault may end on the window's last call).
    bounds = [1 + k * (width - 1) // count for k in range(count + 1)]
    for number, places in enumerate(seen):
        last = bounds[number + 1] - duration - (0 if number == count - 1 else 1)
        assert places == set(range(bounds[number], last + 1)) and len(places) >= 2


def test_fault_starts_spread_over_the_window_rather_than_bunching():
    plans = [FaultSchedule(FaultSettings(mode="E1", count=2, duration=2, seed=seed, window=40), task_id="t").faults
             for seed in range(2000)]
    firsts, seconds = [plan[0].start for plan in plans], [plan[1].start for plan in plans]
    # Two faults in 40 calls: the first starts in calls 1-17 (its stretch is 1-19), the second in 20-38.
    assert (min(firsts), max(firsts), min(seconds), max(seconds)) == (1, 17, 20, 38)
    assert abs(sum(firsts) / 2000 - 9) < 0.5 and abs(sum(seconds) / 2000 - 29) < 0.5
    # Not on fixed calls: no start is drawn for more than a tenth of the seeds.
    assert max(firsts.count(start) for start in set(firsts)) < 200


def test_the_window_comes_from_the_task_and_is_never_too_narrow():
    from occusim.environments import ReferenceStep, Task
    from occusim.server._fault_window import expected_calls, fault_window

    steps = [ReferenceStep(tool="t", observation={}) for _ in range(15)]
    task = Task(id="s/t", title="t", instruction="i", difficulty=1, verification_plan="p", reference_solution=steps)
    assert expected_calls(task) == 15 and FaultSchedule.for_task(FaultSettings(mode="E1"), task).window == 15
    plan = "Check:\n\n1. **Evidence**\n   - 1. nested\n2. Second\n3. Third\n"
    occubench = task.model_copy(update={"reference_solution": [], "verification_plan": plan})
    assert expected_calls(occubench) == 3
    # Three plan steps are fewer than twice the six calls two faults of two calls need.
    assert FaultSchedule.for_task(FaultSettings(mode="E1"), occubench).window == 12
    assert FaultSchedule.for_task(FaultSettings(mode="E1", window=30), occubench).window == 30
    short = task.model_copy(update={"max_steps": 8})
    assert FaultSchedule.for_task(FaultSettings(mode="E1"), short).window == 8
    assert fault_window(6, expected=0, max_steps=4) == 6 and fault_window(0, expected=9) == 0


@settings(max_examples=400, deadline=None)
@given(mode=st.sampled_from(["E1", "E2", "E3"]), count=st.integers(1, 5), duration=st.integers(1, 4),
       seed=st.integers(0, 2**31), calls=st.integers(0, 60), window=st.none() | st.integers(1, 60))
def test_every_episode_as_long_as_the_window_meets_every_fault_for_its_full_duration(mode, count, duration, seed,
                                                                                      calls, window):
    schedule = FaultSchedule(FaultSettings(mode=mode, count=count, duration=duration, seed=seed, window=window),
                             task_id="t")
    steps = play(schedule, calls)
    tally = schedule.tally(steps)
    assert tally.planned == count and schedule.calls_needed == count * (duration + 1)
    assert tally.window == schedule.window >= 2 * schedule.calls_needed

    hits = faulted(steps)
    assert 0 not in hits
    # Each fault covers `duration` consecutive calls, then at least one clean call (transient), in plan order.
    runs = [steps[i].fault.detail for i in hits]
    assert runs == [str(n) for n in range(count) for _ in range(duration)][: len(hits)]
    for first, second in zip(hits, hits[1:], strict=False):
        same = steps[first].fault.detail == steps[second].fault.detail
        assert second == first + 1 if same else second >= first + 2
    if calls >= schedule.window:
        assert len(hits) == count * duration
        assert tally.met == count and not tally.too_short
        if mode == "E3" and count >= 2:
            assert {steps[i].fault.kind for i in hits} == {"explicit", "implicit"}
    # A shorter episode meets the faults that start before it ends, and is flagged when that is fewer.
    assert tally.met == sum(1 for fault in schedule.faults if fault.start < calls)
    assert tally.too_short == (tally.met < count) and not tally.not_applicable


@settings(max_examples=300, deadline=None)
@given(mode=st.sampled_from(["E1", "E2", "E3"]), count=st.integers(1, 4), duration=st.integers(1, 3),
       seed=st.integers(0, 2**31), blocked=st.lists(st.booleans(), max_size=25), tail=st.integers(0, 40))
def test_a_call_that_cannot_carry_its_fault_hands_it_on(mode, count, duration, seed, blocked, tail):
    """Invalid calls, failed simulations and answers nothing can degrade never cost a fault."""
    schedule = FaultSchedule(FaultSettings(mode=mode, count=count, duration=duration, seed=seed), task_id="t")
    steps = play(schedule, len(blocked) + tail, lambda i: i >= len(blocked) or not blocked[i])
    hits = faulted(steps)
    details = [steps[i].fault.detail for i in hits]
    assert details == [str(n) for n in range(count) for _ in range(duration)][: len(hits)]
    # Each call that could not carry a due fault delays the plan by one call, no more.
    refusals = sum(1 for i in range(len(steps)) if schedule.next_fault(steps[:i]) is not None and steps[i].fault is None)
    if len(steps) >= schedule.window + refusals:
        assert schedule.tally(steps).met == count and len(hits) == count * duration
    if tail >= schedule.window:
        assert schedule.tally(steps).met == count


def test_an_implicit_fault_no_answer_can_take_is_not_applicable_rather_than_too_short():
    schedule = FaultSchedule(FaultSettings(mode="E2", count=2, duration=2, seed=4), task_id="t")
    first = schedule.faults[0].start
    # The world model answered every call (no `error`), but nothing could be degraded: faults not applicable.
    refused = play(schedule, first + 3, carries=lambda index: False)
    tally = schedule.tally(refused)
    assert (tally.met, tally.refused, tally.not_applicable, tally.too_short) == (0, 3, True, False)
    # Ended before the first fault was due: too short.
    early = schedule.tally(play(schedule, first, carries=lambda index: False))
    assert (early.met, early.not_applicable, early.too_short) == (0, False, True)
    # Calls refused for invalid arguments or an unusable answer do not make a fault inapplicable.
    invalid = play(schedule, first + 3, carries=lambda index: False)
    for step in invalid:
        step.error = "invalid arguments"
    assert schedule.tally(invalid).too_short and not schedule.tally(invalid).not_applicable
    # Explicit faults are carried by any valid call: an E1 episode is never "not applicable".
    e1 = FaultSchedule(FaultSettings(mode="E1", count=2, duration=2, seed=4), task_id="t")
    assert not e1.tally(play(e1, 30, carries=lambda index: False)).not_applicable
    # Once a later answer takes the fault, the plan goes on.
    later = play(schedule, schedule.window + 3, carries=lambda index: index > first + 2)
    assert schedule.tally(later).met == 2 and schedule.tally(later).refused == 0


def test_short_episodes_meet_what_they_can_hold():
    for seed in range(50):
        schedule = FaultSchedule(FaultSettings(mode="E3", count=2, duration=2, seed=seed), task_id="t")
        first, second = (fault.start for fault in schedule.faults)
        for calls in range(0, 14):
            tally = schedule.tally(play(schedule, calls))
            met = (calls > first) + (calls > second)
            assert (tally.planned, tally.met, tally.too_short) == (2, met, met < 2)


async def test_e1_errors_skip_the_model_keep_the_state_and_are_transient(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model, faults=FaultSettings(mode="E1", count=2, duration=2, seed=5))
    schedule = episode.schedule

    for index in range(schedule.window):
        calls_before = model.calls
        state_before = episode.state
        planned = schedule.next_fault(episode.record.steps)
        outcome = await episode.step("set_priority", {"patient_id": "P2", "priority": 1 + index % 5})
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

    first, second = (fault.start for fault in schedule.faults)
    assert faulted(episode.record.steps) == [first, first + 1, second, second + 1]
    assert schedule.tally(episode.record.steps).met == 2
    stored = await sqlite_store.load_episode(episode.id)
    assert [s.fault for s in stored.steps] == [s.fault for s in episode.record.steps]


async def test_an_invalid_call_leaves_the_fault_to_the_next_call(sqlite_store):
    episode = await start_episode(sqlite_store, TriageModel(),
                                  faults=FaultSettings(mode="E1", count=1, duration=2, seed=3))
    for _ in range(episode.schedule.faults[0].start):
        assert (await episode.step("list_patients", {})).record.fault is None
    bad = await episode.step("get_patient", {"patient_id": "nobody"})
    assert bad.observation["error"]["type"] == "invalid_arguments" and bad.record.fault is None
    first = await episode.step("get_patient", {"patient_id": "P1"})
    second = await episode.step("get_patient", {"patient_id": "P1"})
    after = await episode.step("get_patient", {"patient_id": "P1"})
    assert first.record.fault and second.record.fault and after.record.fault is None and not after.is_error


async def test_e2_applies_the_true_patch_but_shows_a_degraded_observation(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model, faults=FaultSettings(mode="E2", count=2, duration=1, seed=11))

    for index in range(episode.task.max_steps):
        # Each write is new (nothing optional, no earlier answer to repeat), so its fault moves to the
        # listing after it.
        if index % 2 == 0:
            outcome = await episode.step("set_priority", {"patient_id": "P1", "priority": 1 + index // 2 % 5})
            assert outcome.record.fault is None
        else:
            outcome = await episode.step("list_patients", {})
        # The true state change happens whatever the agent is shown.
        assert episode.state["patients"][0]["priority"] == 1 + index // 2 % 5
        assert model.calls == index + 1
        fault = outcome.record.fault
        if fault is None:
            assert outcome.record.true_observation is None
        else:
            assert fault.kind == "implicit"
            assert outcome.record.true_observation == {"patients": episode.state["patients"], "count": 3}
            assert outcome.observation != outcome.record.true_observation
    # A fault due on a write moves to the listing after it.
    hits = faulted(episode.record.steps)
    assert len(hits) == 2 and all(index % 2 == 1 for index in hits)
    assert hits[0] in (episode.schedule.faults[0].start, episode.schedule.faults[0].start + 1)
    assert episode.schedule.tally(episode.record.steps).met == 2
    stored = await sqlite_store.load_episode(episode.id)
    faulted_steps = [s for s in stored.steps if s.fault]
    assert len(faulted_steps) == 2 and all(s.true_observation for s in faulted_steps)


async def test_an_answer_nothing_can_degrade_hands_the_fault_on(sqlite_store):
    """An error answer stays an error, a first call of its kind has no stale answer: the next call is degraded."""
    model = TriageModel()
    episode = await start_episode(sqlite_store, model, faults=FaultSettings(mode="E2", count=1, duration=1, seed=0))
    await episode.step("list_patients", {})
    missing = await episode.step("get_patient", {"patient_id": "P9"})
    assert missing.is_error and missing.record.fault is None and missing.observation == {"error": "no patient P9"}
    first_write = await episode.step("set_priority", {"patient_id": "P1", "priority": 2})
    assert first_write.record.fault is None and first_write.observation["priority"] == 2
    assert episode.schedule.tally(episode.record.steps).met == 0

    listing = await episode.step("list_patients", {})
    assert listing.record.fault is not None and listing.record.fault.kind == "implicit"
    assert listing.observation != listing.record.true_observation
    assert episode.schedule.tally(episode.record.steps).met == 1


async def test_stale_repeats_only_an_earlier_answer_to_the_same_call(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model, faults=FaultSettings(mode="E2", count=3, duration=1, seed=0))
    # Faults on calls 1, 3 and 5, each labelled stale.
    episode.schedule.faults = tuple(dataclasses.replace(f, label="stale", start=1 + 2 * f.number, gap=1)
                                    for f in episode.schedule.faults)
    await episode.step("get_patient", {"patient_id": "P1"})
    # Another patient's record is never passed off as this one's: with no earlier answer to this call,
    # another degradation is used.
    other = await episode.step("get_patient", {"patient_id": "P2"})
    assert other.record.fault.label != "stale" and other.observation["id"] == "P2"
    await episode.step("set_priority", {"patient_id": "P2", "priority": 1})
    again = await episode.step("get_patient", {"patient_id": "P2"})
    assert again.record.fault.label == "stale"
    assert again.observation == {**again.record.true_observation, "priority": 4}
    assert again.record.true_observation["priority"] == 1


async def test_e3_mixes_explicit_and_implicit_faults(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model, faults=FaultSettings(mode="E3", count=2, duration=1, seed=2))
    for _ in range(episode.schedule.window):
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
    # The count says what the list now holds; the original is untouched.
    assert shown["count"] == len(shown["patients"]) and fault.detail.endswith(f"/count 5 -> {shown['count']}")
    assert LISTING["count"] == 5 and len(LISTING["patients"]) == 5


def test_truncation_keeps_the_counts_around_the_list_consistent():
    answer = {"total": 4, "page": {"item_count": 4, "items": [{"id": i} for i in range(4)], "limit": 4,
                                   "total_weight": 4, "numItems": 4},
              "summary": {"count": 4}, "grand_total_pages": 9, "flag": True}
    shown, fault = degrade(answer, "truncate_list", output_schema=None, previous=None, rng=random.Random(1))
    kept = len(shown["page"]["items"])
    assert kept in (1, 2)
    assert shown["total"] == shown["page"]["item_count"] == shown["page"]["numItems"] == kept
    # Not a count of this list: a sibling limit or sum, a count elsewhere, a total that differed.
    assert shown["page"]["limit"] == shown["page"]["total_weight"] == 4 and shown["summary"] == {"count": 4} and shown["grand_total_pages"] == 9
    # Counts inside one entry of a list describe that entry, not the list around it.
    nested = {"count": 3, "rows": [{"tags": ["a", "b", "c"], "count": 3}, {"tags": []}, {"tags": []}]}
    shown, fault = degrade(nested, "truncate_list", output_schema=None, previous=None, rng=random.Random(0))
    assert fault.detail.startswith("/rows: 3 -> ") and shown["count"] == len(shown["rows"])
    assert shown["rows"][0]["count"] == 3


@pytest.mark.parametrize("label", ["truncate_list", "drop_fields", "null_fields", "stale"])
def test_an_error_answer_is_never_degraded(label):
    error = {"error": {"type": "not_found", "message": "no patient P9"}, "patients": [{"id": "P1"}, {"id": "P2"}]}
    assert degrade(error, label, output_schema=None, previous=RECORD, rng=random.Random(0)) is None
    assert degrade({"error": "no patient P9"}, label, output_schema=PATIENT, previous=RECORD,
                   rng=random.Random(0)) is None
    # Nor is an earlier error repeated as a stale answer.
    shown, fault = degrade(RECORD, "stale", output_schema=PATIENT, previous={"error": "down"}, rng=random.Random(0))
    assert fault.label != "stale" and "error" not in shown


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
    # An answer outside the declared schema: no field is known to be optional, a list may still be cut.
    answer = {"warning": {"code": "PARTIAL", "message": "unit U9 unknown"}, "units": ["U1", "U2", "U3"]}
    shown, fault = degrade(answer, "drop_fields", output_schema=DISPATCH_SCHEMA, previous=None,
                           rng=random.Random(0))
    assert fault.label == "truncate_list" and shown["warning"] == answer["warning"]
