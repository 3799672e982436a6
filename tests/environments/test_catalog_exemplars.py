"""Judge exemplars in the bundled catalog are graded answers of their own, not copies of each other or of the
reference answer (test_catalog_conventions.py checks that they pass and fail an llm item)."""

from __future__ import annotations

import pytest

from occusim.environments import Task, load_catalog

CATALOG = load_catalog()
WITH_EXEMPLARS = sorted((t for t in CATALOG.tasks.values() if t.rubric.exemplars), key=lambda t: t.id)


@pytest.mark.parametrize("task", WITH_EXEMPLARS, ids=[t.id for t in WITH_EXEMPLARS])
def test_exemplars_are_distinct_graded_answers(task: Task):
    excerpts = [exemplar.excerpt.strip() for exemplar in task.rubric.exemplars]
    assert len(set(excerpts)) == len(excerpts), f"{task.id}: two exemplars share an excerpt"
    reference = (task.final_answer or "").strip()
    assert reference not in excerpts, f"{task.id}: an exemplar repeats the reference final answer verbatim"
