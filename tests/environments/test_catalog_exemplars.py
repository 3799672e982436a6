"""The bundled catalog's judge exemplars teach a boundary: every judged item they cover has a pass and a fail."""

from __future__ import annotations

import pytest

from occusim.environments import LlmItem, Task, load_catalog

CATALOG = load_catalog()
WITH_EXEMPLARS = sorted((t for t in CATALOG.tasks.values() if t.rubric.exemplars), key=lambda t: t.id)


@pytest.mark.parametrize("task", WITH_EXEMPLARS, ids=[t.id for t in WITH_EXEMPLARS])
def test_each_llm_item_has_a_passing_and_a_failing_exemplar(task: Task):
    llm_items = {item.id for item in task.rubric.items if isinstance(item, LlmItem)}
    named = [exemplar.item_id for exemplar in task.rubric.exemplars]
    assert set(named) <= llm_items, (
        f"{task.id}: exemplars for items the LLM judge never reads: {set(named) - llm_items}"
    )
    for item_id in sorted(llm_items):
        verdicts = {exemplar.passed for exemplar in task.rubric.exemplars if exemplar.item_id == item_id}
        assert verdicts == {True, False}, (
            f"{task.id}: item {item_id!r} has exemplars with verdicts {verdicts}"
        )


@pytest.mark.parametrize("task", WITH_EXEMPLARS, ids=[t.id for t in WITH_EXEMPLARS])
def test_exemplars_explain_their_verdict_and_differ_from_each_other(task: Task):
    excerpts = [exemplar.excerpt.strip() for exemplar in task.rubric.exemplars]
    assert len(set(excerpts)) == len(excerpts), f"{task.id}: two exemplars share an excerpt"
    for exemplar in task.rubric.exemplars:
        assert exemplar.explanation.strip(), (
            f"{task.id}: an exemplar for {exemplar.item_id!r} gives no reason"
        )
        assert exemplar.excerpt.strip() != (task.final_answer or "").strip(), (
            f"{task.id}: an exemplar repeats the reference final answer instead of a graded answer"
        )
