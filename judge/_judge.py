"""judge(): score one recorded episode against its task's rubric and verification plan."""

from __future__ import annotations

from typing import Literal

from occusim.environments import EpisodeRecord, LlmItem, Scenario, StateItem, Task, ToolCallItem, Usage
from occusim.llm import ModelConfig

from ._errors import JudgeError
from ._llm_judge import judge_llm_items
from ._prompt import PROMPT_VERSION
from ._scoring import check_item, score_items, unjudged_item
from ._settings import JudgeSettings
from ._verdict import ItemVerdict, Verdict

VERIFICATION_PLAN_ID = "verification_plan"
MAX_VOTES = 15
UNTRACKED_STATE = "not judged: the simulator tracked no state in this episode (history mode)"


def verification_plan_item(task: Task) -> LlmItem | None:
    """The verification plan as ONE binary llm item (weight 1), or None when the task has no plan."""
    if not task.verification_plan or not task.verification_plan.strip():
        return None
    if any(item.id == VERIFICATION_PLAN_ID for item in task.rubric.items):
        raise JudgeError(
            f"task {task.id!r}: the rubric item id {VERIFICATION_PLAN_ID!r} is reserved for the verification "
            "plan; rename that item"
        )
    return LlmItem(
        id=VERIFICATION_PLAN_ID,
        description="The episode satisfies the task's verification plan as a whole",
        checks=[task.verification_plan],
    )


async def judge(
    task: Task,
    record: EpisodeRecord,
    *,
    scenario: Scenario | None = None,
    model: ModelConfig | str | None = None,
    votes: int = 3,
    seed: int = 0,
    llm_items: Literal["judge", "skip"] = "judge",
    settings: JudgeSettings | None = None,
) -> Verdict:
    """Score `record` against `task`: deterministic items directly, llm items by k-vote majority.

    With `llm_items="skip"` no model is called: llm items (and the verification plan) are reported as
    unjudged and the verdict is partial. A check that none of its votes could answer, and a state check
    of an episode whose state was not tracked (history mode), cannot be decided: they are listed in
    `unjudged_checks`. `settings` defaults to JudgeSettings.from_env(). Raises JudgeModelError when the
    judge model cannot be reached, JudgeError for unusable arguments.
    """
    settings = settings if settings is not None else JudgeSettings.from_env()
    if not 1 <= votes <= MAX_VOTES:
        raise JudgeError(f"votes must be between 1 and {MAX_VOTES}, got {votes}")
    if record.task_id != task.id:
        raise JudgeError(f"the episode {record.id!r} is a run of task {record.task_id!r}, not of {task.id!r}")
    plan = verification_plan_item(task)
    rubric_items = [*task.rubric.items, *([plan] if plan else [])]
    pending = [item for item in rubric_items if isinstance(item, LlmItem)]
    judged: dict[str, ItemVerdict] = {}
    usage = Usage()
    reasks = 0
    judge_model: str | None = None
    if pending and llm_items == "judge":
        config = _resolve(model)
        judge_model = config.model
        judgment = await judge_llm_items(
            pending,
            task,
            record,
            scenario=scenario,
            model=config,
            votes=votes,
            seed=seed,
            settings=settings,
            exemplars=task.rubric.exemplars,
        )
        judged = {verdict.id: verdict for verdict in judgment.items}
        usage, reasks = judgment.usage, judgment.reasks
    untracked = record.mode == "history"

    def verdict_of(item: LlmItem | StateItem | ToolCallItem) -> ItemVerdict:
        if isinstance(item, LlmItem):
            return judged.get(item.id) or unjudged_item(item)
        if untracked and isinstance(item, StateItem):
            # History mode never changes the state: checking it would fail every write the agent made.
            return unjudged_item(item, UNTRACKED_STATE)
        return check_item(item, record)

    items = [verdict_of(item) for item in rubric_items]
    score, passed = score_items(items, task.rubric.pass_threshold)
    checks = [check for item in items for check in item.checks]
    return Verdict(
        task_id=task.id,
        episode_id=record.id,
        score=score,
        passed=passed,
        pass_threshold=task.rubric.pass_threshold,
        partial=any(item.passed is None for item in items),
        items=items,
        judge_model=judge_model,
        prompt_version=PROMPT_VERSION,
        votes=votes if judge_model else 0,
        seed=seed,
        abstentions=sum(check.abstentions for check in checks),
        ties=[check.id for check in checks if check.tie],
        unjudged_checks=[
            check.id
            for item in items
            for check in item.checks
            if check.unjudged or (untracked and item.kind == "state")
        ],
        reasks=reasks,
        settings=settings,
        usage=usage,
    )


def _resolve(model: ModelConfig | str | None) -> ModelConfig:
    if isinstance(model, ModelConfig):
        return model
    return ModelConfig.for_role("judge", model=model)
