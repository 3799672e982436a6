"""The voting LLM judge: k schema-constrained votes, each seeing the checks in its own order."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from occusim.environments import EpisodeRecord, Exemplar, LlmItem, Scenario, Task, Usage
from occusim.llm import LLMError, LLMOutputError, ModelConfig, complete, sum_usage

from ._errors import JudgeModelError
from ._prompt import JudgedCheck, answer_token_budget, build_messages, response_schema
from ._scoring import item_passed
from ._verdict import ItemVerdict, Vote
from ._voting import read_vote, tally, vote_orders


async def judge_llm_items(
    items: Sequence[LlmItem],
    task: Task,
    record: EpisodeRecord,
    *,
    scenario: Scenario | None,
    model: ModelConfig,
    votes: int,
    seed: int,
    exemplars: Sequence[Exemplar] = (),
) -> tuple[list[ItemVerdict], Usage]:
    """Judge every check of `items` in one call per vote; returns the item verdicts and the usage."""
    checks = [
        JudgedCheck(
            id=f"{item.id}#{i}", item_id=item.id, index=i, text=text, item_description=item.description
        )
        for item in items
        for i, text in enumerate(item.checks)
    ]
    orders = vote_orders(len(checks), votes, seed)
    step_indexes = {step.index for step in record.steps}

    async def one_vote(vote: int) -> tuple[dict[str, Vote], Usage]:
        ordered = [checks[i] for i in orders[vote]]
        messages = build_messages(task, record, scenario, ordered, exemplars)
        try:
            completion = await complete(
                model,
                messages,
                response_schema=response_schema(ordered),
                seed=seed + vote,
                max_tokens=answer_token_budget(ordered),
                role="judge",
            )
        except LLMOutputError as error:
            # The model answered, just not in a usable shape: that is an abstention, not an outage.
            return read_vote(error.text or "", vote, ordered, step_indexes), Usage()
        except LLMError as error:
            raise JudgeModelError(
                f"the judge model {model.model!r} failed on task {task.id!r} (vote {vote + 1} of {votes}): {error}"
            ) from error
        return read_vote(completion.text, vote, ordered, step_indexes), completion.usage

    results = await asyncio.gather(*(one_vote(vote) for vote in range(votes)))
    usage = sum_usage(u for _, u in results)
    verdicts = {check.id: tally(check, [ballot[check.id] for ballot, _ in results]) for check in checks}
    out = []
    for item in items:
        item_checks = [verdicts[f"{item.id}#{i}"] for i in range(len(item.checks))]
        out.append(
            ItemVerdict(
                id=item.id,
                kind="llm",
                weight=item.weight,
                description=item.description,
                passed=item_passed(item_checks),
                checks=item_checks,
                deterministic=False,
            )
        )
    return out, usage
