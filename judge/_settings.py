"""How the judge samples and counts its votes: temperature, token cap, re-asks, the no-usable-vote rule."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._errors import JudgeError

# "unjudged": a check no vote could answer has no verdict (an infrastructure outcome, never the agent's
# failure). "fail": it is failed, as in OccuBench's verifier where a parse error is a False vote.
NoUsableVote = Literal["unjudged", "fail"]

DEFAULT_REASKS = 2
MAX_REASKS = 10
_ENVIRONMENT = {
    "temperature": "OCCUSIM_JUDGE_TEMPERATURE",
    "max_tokens": "OCCUSIM_JUDGE_MAX_TOKENS",
    "reasks": "OCCUSIM_JUDGE_REASKS",
}


class JudgeSettings(BaseModel):
    """The judge's sampling and vote-counting settings, stored in every verdict."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float | None = Field(
        default=None, ge=0, description="Sampling temperature of the votes; None: the provider's default."
    )
    max_tokens: int | None = Field(
        default=None, ge=1, description="Token cap of one vote's answer; None: the provider's default."
    )
    reasks: int = Field(
        default=DEFAULT_REASKS,
        ge=0,
        le=MAX_REASKS,
        description="How many more times a vote is asked while its answer is unusable (unparseable, cut short).",
    )
    on_no_usable_vote: NoUsableVote = Field(
        default="unjudged", description="What a check gets when none of its votes is usable."
    )

    @classmethod
    def from_env(cls, **overrides: object) -> JudgeSettings:
        """Defaults, then OCCUSIM_JUDGE_TEMPERATURE / _MAX_TOKENS / _REASKS, then the non-None `overrides`."""
        from_env = {
            name: os.environ[variable].strip()
            for name, variable in _ENVIRONMENT.items()
            if os.environ.get(variable, "").strip()
        }
        given = {name: value for name, value in overrides.items() if value is not None}
        try:
            return cls.model_validate({**from_env, **given})
        except ValidationError as error:
            problems = []
            for detail in error.errors(include_url=False):
                name = str(detail["loc"][0]) if detail["loc"] else "settings"
                where = f" (from ${_ENVIRONMENT[name]})" if name in from_env and name not in given else ""
                problems.append(f"{name}{where}: {detail['msg']}")
            raise JudgeError(f"invalid judge settings: {'; '.join(problems)}") from None
