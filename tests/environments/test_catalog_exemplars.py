"""Judge exemplars in the bundled catalog are graded answers of their own, not copies of each other or of the
reference answer (test_catalog_conventions.py checks that they pass and fail an llm item)."""

from __future__ import annotations

import pytest

from occusim.environments import Exemplar, Task, load_catalog

CATALOG = load_catalog()
WITH_EXEMPLARS = sorted((t for t in CATALOG.tasks.values() if t.rubric.exemplars), key=lambda t: t.id)


@pytest.mark.parametrize("task", WITH_EXEMPLARS, ids=[t.id for t in WITH_EXEMPLARS])
def test_exemplars_are_distinct_graded_answers(task: Task):
    excerpts = [exemplar.excerpt.strip() for exemplar in task.rubric.exemplars]
    assert len(set(excerpts)) == len(excerpts), f"{task.id}: two exemplars share an excerpt"
    reference = (task.final_answer or "").strip()
    assert reference not in excerpts, f"{task.id}: an exemplar repeats the reference final answer verbatim"


@pytest.mark.parametrize("task", WITH_EXEMPLARS, ids=[t.id for t in WITH_EXEMPLARS])
def test_near_misses_sharing_the_passing_trajectory_place_the_error_in_the_answer(task: Task):
    # A near miss whose error is in what the agent did shows those calls; one that repeats the passing
    # trajectory teaches a boundary in the answer alone, and says so.
    for exemplar in task.rubric.exemplars:
        if exemplar.passed:
            continue
        passing = {
            e.trajectory_facts for e in task.rubric.exemplars if e.passed and e.item_id == exemplar.item_id
        }
        if exemplar.trajectory_facts in passing:
            assert "error is in the answer" in exemplar.explanation, (
                f"{task.id} {exemplar.item_id}: the near miss repeats the passing trajectory without saying its "
                "error is in the answer alone"
            )


def test_trajectory_facts_are_the_excerpt_before_the_final_answer():
    exemplar = Exemplar(excerpt="Trajectory facts: get_x(1)\n  -> ok.\nFinal answer: done", passed=True)
    assert exemplar.trajectory_facts == "Trajectory facts: get_x(1) -> ok."
