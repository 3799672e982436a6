"""Which model serves which role: explicit arguments, then OCCUSIM_* environment variables, then local."""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field

from ._errors import LLMError

ROLES = ("world_model", "judge", "agent")
LOCAL_MODEL = "local"

_notice_lock = threading.Lock()
_notice_shown = False


@dataclass(frozen=True)
class ModelConfig:
    """A litellm model string plus the endpoint and key to reach it."""

    model: str
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)

    @classmethod
    def for_role(
        cls,
        role: str,
        model: str | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
    ) -> ModelConfig:
        """Resolve the model for `role` from arguments, OCCUSIM_<ROLE>_* then OCCUSIM_MODEL, else local."""
        if role not in ROLES:
            raise LLMError(f"unknown model role {role!r}; expected one of {', '.join(ROLES)}")
        prefix = f"OCCUSIM_{role.upper()}_"
        model = model or os.environ.get(prefix + "MODEL") or os.environ.get("OCCUSIM_MODEL")
        api_base = api_base or os.environ.get(prefix + "API_BASE") or None
        api_key = api_key or os.environ.get(prefix + "API_KEY") or None
        if not model:
            model = LOCAL_MODEL
            _show_local_notice()
        return cls(model=model, api_base=api_base, api_key=api_key)

    @property
    def is_local(self) -> bool:
        return self.model == LOCAL_MODEL or self.model.startswith(LOCAL_MODEL + ":")

    @property
    def is_local_file(self) -> bool:
        """`local:/path/model.gguf`: a model file on this machine, not the bundled model."""
        return self.model.startswith(LOCAL_MODEL + ":")

    @property
    def is_scripted(self) -> bool:
        return self.model.startswith("scripted/")


def _show_local_notice() -> None:
    global _notice_shown
    with _notice_lock:
        if _notice_shown:
            return
        _notice_shown = True
    print(
        "occusim: no model configured, using the bundled local model (Gemma 3 270M) - fine for offline smoke "
        "runs, too weak for evaluations; set OCCUSIM_MODEL (or OCCUSIM_WORLD_MODEL_MODEL, "
        "OCCUSIM_JUDGE_MODEL, OCCUSIM_AGENT_MODEL) to a litellm model such as openai/gpt-4.1.",
        file=sys.stderr,
    )
