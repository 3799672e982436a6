"""The voting LLM judge: k schema-constrained votes, each seeing the checks in its own order."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from occusim.environments import EpisodeRecord, Exemplar, LlmItem, Scenario, Task, Usage
from occusim.llm import LLMError, LLMOutputError, ModelConfig, ProviderError, complete, sum_usage

from ._errors import JudgeModelError
from ._prompt import JudgedCheck, build_messages, response_schema
from ._scoring import item_passed
from ._settings import JudgeSettings
from ._verdict import ItemVerdict, Vote
from ._voting import read_vote, tally, vote_orders, vote_seed

log = logging.getLogger("occusim.judge")


@dataclass
class LlmJudgment:
    """The judged llm items, what the calls cost and how many requests were asked again."""

    items: list[ItemVerdict]
    usage: Usage
    reasks: int


async def judge_llm_items(
    items: Sequence[LlmItem],
    task: Task,
    record: EpisodeRecord,
    *,
    scenario: Scenario | None,
    model: ModelConfig,
    votes: int,
    seed: int,
    settings: JudgeSettings,
    exemplars: Sequence[Exemplar] = (),
) -> LlmJudgment:
    """Judge every check of `items` in one request per vote, asking a vote again while it is unusable."""
    checks = [
        JudgedCheck(
            id=f"{item.id}#{i}", item_id=item.id, index=i, text=text, item_description=item.description
        )
        for item in items
        for i, text in enumerate(item.checks)
    ]
    orders = vote_orders(len(checks), votes, seed)
    step_indexes = {step.index for step in record.steps}

    async def one_vote(vote: int) -> tuple[dict[str, Vote], Usage, int]:
        ordered = [checks[i] for i in orders[vote]]
        messages = build_messages(task, record, scenario, ordered, exemplars)
        schema = response_schema(ordered)
        ballot: dict[str, Vote] = {}
        spent: list[Usage] = []
        requests = 0
        for attempt in range(settings.reasks + 1):
            requests += 1
            try:
                completion = await complete(
                    model,
                    messages,
                    response_schema=schema,
                    # Each vote and each re-ask is its own sample, with its own cache entry.
                    seed=vote_seed(seed, vote, attempt),
                    temperature=settings.temperature,
                    max_tokens=settings.max_tokens,
                    role="judge",
                )
            except LLMOutputError as error:
                # The model answered, just not in a usable shape: an abstention, asked again, not an outage.
                read = read_vote(error.text or "", vote, ordered, step_indexes)
            except LLMError as error:
                # The provider's own text (redacted) is for the operator's log; callers get its status and type.
                log.warning("judge model %s, task %s, vote %d: %s", model.model, task.id, vote + 1, error)
                detail = f"provider: {error.summary}" if isinstance(error, ProviderError) else str(error)
                raise JudgeModelError(
                    f"the judge model {model.model!r} failed on task {task.id!r} (vote {vote + 1} of {votes}): "
                    f"{detail}"
                ) from error
            else:
                spent.append(completion.usage)
                read = read_vote(
                    completion.text, vote, ordered, step_indexes, cut_short=completion.finish_reason == "length"
                )
            for check_id, answer in read.items():
                if check_id not in ballot or ballot[check_id].passed is None:
                    ballot[check_id] = answer.model_copy(update={"attempts": requests})
            if all(answer.passed is not None for answer in ballot.values()):
                break
        return ballot, sum_usage(spent), requests - 1

    results = await asyncio.gather(*(one_vote(vote) for vote in range(votes)))
    verdicts = {
        check.id: tally(
            check, [ballot[check.id] for ballot, _, _ in results], on_no_usable_vote=settings.on_no_usable_vote
        )
        for check in checks
    }
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
                critical=item.critical,
            )
        )
    return LlmJudgment(
        items=out, usage=sum_usage(usage for _, usage, _ in results), reasks=sum(r for _, _, r in results)
    )
