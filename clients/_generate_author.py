"""One stage's call to the author model through the gateway: the answer is parsed into the stage's part and checked,
and a rejected answer is sent back with its problems, a bounded number of times."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from pydantic import ValidationError

from occusim.environments import OccusimError, format_location
from occusim.llm import LLMError, LLMOutputError, ModelConfig, ProviderConfigError, complete

from ._generate_draft import Draft, StageName
from ._generate_parts import Part
from ._generate_stages import SYSTEM_PROMPT, Stage, context_json


class StageFailedError(OccusimError):
    """No answer of the author model for a stage was that stage's part, within its retries."""

    exit_code = 1

    def __init__(self, stage: StageName, problems: list[str]) -> None:
        self.stage = stage
        self.problems = problems
        shown = "; ".join(problems[:5]) + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else "")
        super().__init__(f"the author model gave no valid {stage} part: {shown}")


@dataclass
class StageCall:
    """One answer of the author model and what was wrong with it (nothing: it was taken)."""

    stage: StageName
    round: int  # 0: the first pass; n: the n-th round of repair after verification
    attempt: int
    problems: list[str]
    completion_tokens: int = 0
    # A part with problems, kept as the best answer of its stage: verification finds its problems again.
    kept: bool = False

    @property
    def accepted(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class AuthorSettings:
    """How the author model is called: `retries` re-asks per stage call, `max_tokens` per answer (None: the
    provider's default, or the local backend's cap), `timeout` seconds per request; `on_call` hears of each
    answer as it is judged."""

    model: ModelConfig
    task_count: int = 3
    retries: int = 2
    max_tokens: int | None = None
    temperature: float = 0.0
    on_call: Callable[[StageCall], None] | None = None
    timeout: float = 600.0


def _first_message(stage: Stage, draft: Draft, settings: AuthorSettings, repair: list[str] | None) -> str:
    schema = json.dumps(stage.response_schema(draft, settings.task_count), separators=(",", ":"))
    text = [
        stage.prompt(draft, settings.task_count),
        "",
        f"The scenario so far (JSON): {context_json(draft)}",
    ]
    previous = draft.part(stage.name)
    if repair and previous is not None:
        text += [
            "",
            "Checking the whole scenario found these problems in your earlier answer for this part:",
            *(f"- {problem}" for problem in repair),
            f"Your earlier answer: {previous.model_dump_json(exclude_unset=True)}",
            "Answer with the whole part again, corrected.",
        ]
    text += ["", f"Answer with one JSON object valid against this JSON Schema: {schema}"]
    return "\n".join(text)


def _problems(
    stage: Stage, text: str, draft: Draft, settings: AuthorSettings
) -> tuple[Part | None, list[str]]:
    """The answer as the stage's part, or the problems that keep it from being one."""
    from occusim.llm import parse_json_output

    try:
        part = cast(Part, stage.part.model_validate(parse_json_output(text)))
    except LLMOutputError:
        return None, ["(answer): no JSON object found in the answer"]
    except ValidationError as error:
        return None, [f"{format_location(e['loc']) or '(answer)'}: {e['msg']}" for e in error.errors()]
    return part, stage.check(part, stage.with_part(draft, part), settings.task_count)


async def ask_stage(
    stage: Stage,
    draft: Draft,
    settings: AuthorSettings,
    trail: list[StageCall],
    *,
    round_number: int = 0,
    repair: list[str] | None = None,
) -> Draft:
    """`draft` with `stage`'s part written (or rewritten, given the `repair` problems) by the author model.

    When no answer passes every check, the latest valid part with the fewest problems is kept (its problems go on to
    verification and to the review sheet); StageFailedError when no answer was the part at all."""
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": _first_message(stage, draft, settings, repair)},
    ]
    problems: list[str] = []
    best: tuple[Part, StageCall] | None = None
    for attempt in range(1, settings.retries + 2):
        try:
            completion = await complete(
                settings.model,
                messages,
                response_schema=stage.response_schema(draft, settings.task_count),
                temperature=settings.temperature,
                max_tokens=settings.max_tokens,
                timeout=settings.timeout,
                role="author",
            )
        except ProviderConfigError:
            raise  # a setting to fix, not an answer to judge
        except LLMError as error:
            raise StageFailedError(stage.name, [f"the author model did not answer: {error}"]) from error
        part, problems = _problems(stage, completion.text, draft, settings)
        if completion.finish_reason == "length":
            problems = ["(answer): cut off at the token limit; answer more briefly", *problems]
        call = StageCall(stage.name, round_number, attempt, problems, completion.usage.completion_tokens)
        trail.append(call)
        if settings.on_call is not None:
            settings.on_call(call)
        if part is not None and not problems:
            return stage.with_part(draft, part)
        if part is not None and (best is None or len(problems) <= len(best[1].problems)):
            best = part, call
        messages += [
            {"role": "assistant", "content": completion.text},
            {
                "role": "user",
                "content": "Your answer has these problems:\n"
                + "\n".join(f"- {problem}" for problem in problems)
                + "\nAnswer again with the whole JSON object, corrected.",
            },
        ]
    if best is None:
        raise StageFailedError(stage.name, problems)
    part, call = best
    call.kept = True
    return stage.with_part(draft, part)
