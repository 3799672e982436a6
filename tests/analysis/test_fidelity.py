"""The step checks of simcheck on small hand-made steps: what is an entity, what is known, how lists match."""

from __future__ import annotations

from typing import Any

from occusim.analysis import StepFidelity
from occusim.analysis._fidelity import GoldenAnswer, score_step
from occusim.environments import apply_json_patch

STATE = {"beds": {"B-12": {"bed_id": "B-12", "status": "free", "ward": "ED"}},
         "patients": [{"patient_id": "P-0042", "name": "Ada Moreau", "age": 61, "arrived": "2025-03-14T21:40"}],
         "next_note": 7}
PATIENTS = {"patients": [{"patient_id": "P-0042", "name": "Ada Moreau", "age": 61, "arrived": "2025-03-14T21:40"}]}


def golden(observation: Any, patch: list[dict[str, Any]] | None = None, *, read_only: bool = False) -> GoldenAnswer:
    return GoldenAnswer(state_before=STATE, state_after=apply_json_patch(STATE, patch or []), arguments={},
                      observation=observation, read_only=read_only,
                      output_schema={"properties": {"patients": {"items": {"properties": {"note": {}}}}}})


def score(step: GoldenAnswer, observation: Any, patch: list[dict[str, Any]] | None = None) -> StepFidelity:
    return score_step(step, observation, apply_json_patch(STATE, patch or []))


def test_dates_times_and_quantities_are_not_entities():
    step = golden({"checked_at": "2025-03-15T08:00", "window": "24h", "slot": "10:30", "eta": "15min"})

    result = score(step, {"checked_at": "2025-04-01T09:00", "window": "48h", "slot": "11:30", "eta": "20min"})

    assert result.ungrounded == [] and result.golden_entities == 0


def test_an_unknown_id_is_ungrounded_and_a_known_one_anywhere_is_not():
    step = golden({"note": "bed B-12 is free"})

    result = score(step, {"note": "bed B-12 is free", "bed_id": "B-12", "ref": "NOTE-0099"})

    assert result.ungrounded == ["NOTE-0099"] and result.invented_fields == ["/bed_id", "/ref"]


def test_a_record_the_golden_step_creates_is_known():
    patch = [{"op": "add", "path": "/beds/B-13", "value": {"bed_id": "B-13", "status": "free"}}]
    step = golden({"bed_id": "B-13", "status": "free"}, patch)

    assert score(step, {"bed_id": "B-13", "status": "free"}, patch).faithful
    wrong = score(step, {"bed_id": "B-14", "status": "free"},
                  [{"op": "add", "path": "/beds/B-14", "value": {"bed_id": "B-14", "status": "free"}}])
    assert wrong.ungrounded == ["B-14"] and wrong.omitted == ["B-13"]
    assert wrong.patch_missing == ["/beds/B-13/bed_id", "/beds/B-13/status"] and len(wrong.patch_extra) == 2


def test_state_derived_values_are_compared_on_matched_records():
    step = golden({"patients": [*PATIENTS["patients"], {"patient_id": "P-0043", "name": "Li Wen", "age": 30}]})
    reordered = {"patients": [{"patient_id": "P-0043", "name": "Li Wen", "age": 30},
                              {"patient_id": "P-0042", "name": "Ada Moreau", "age": 62, "arrived": "2025-03-14T21:40"}]}

    result = score(step, reordered)

    # Matched on patient_id despite the order: P-0042's four fields are read from the state, Li Wen's are not.
    assert result.values_differing == ["/patients[P-0042]/age: 61 -> 62"]
    assert result.values_compared == 4 and result.omitted == [] and result.ungrounded == []


def test_numbers_compare_as_numbers_and_booleans_as_booleans():
    state_step = GoldenAnswer(state_before={"flag": True, "n": 1}, state_after={"flag": True, "n": 1}, arguments={},
                            observation={"flag": True, "n": 1})

    assert score_step(state_step, {"flag": True, "n": 1.0}, {"flag": True, "n": 1}).values_agree
    assert score_step(state_step, {"flag": 1, "n": 1}, {"flag": True, "n": 1}).values_differing == ["/flag: True -> 1"]


def test_a_read_only_tool_is_held_to_no_change_not_to_the_golden_patch():
    step = golden(PATIENTS, read_only=True)

    result = score(step, PATIENTS, [{"op": "replace", "path": "/next_note", "value": 8}])

    assert result.read_only_writes == ["/next_note"] and not result.patch_checked and result.patch_agrees


def test_list_items_read_from_the_state_are_compared():
    state = {"units": {"M4": {"skills": ["ALS", "HAZMAT"]}}}
    step = GoldenAnswer(state_before=state, state_after=state, arguments={}, observation={"skills": ["ALS", "HAZMAT"]})

    result = score_step(step, {"skills": ["ALS", "BLS"]}, state)

    assert result.values_compared == 2 and result.values_differing == ["/skills[1]: 'HAZMAT' -> 'BLS'"]
