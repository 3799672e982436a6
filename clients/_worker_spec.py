"""The wire shapes between a batch's driver and its workers (processes or Ray actors): what a worker is
sent to start, and what a worker process reports back."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping

from pydantic import BaseModel, Field

from occusim.analysis import ResultRow, RunConfig

# Variables a Ray actor on another node needs from the driver's environment: occusim's own settings (models,
# endpoints, keys, scripted models, cache) and the providers' keys and endpoints that litellm reads.
_FORWARDED_PREFIXES = ("OCCUSIM_", "LITELLM_", "OPENAI_", "ANTHROPIC_", "AZURE_", "GEMINI_", "VERTEX", "MISTRAL_",
                       "COHERE_", "GROQ_", "TOGETHER", "HOSTED_VLLM_", "HF_", "HUGGINGFACE_", "AWS_", "DEEPSEEK_",
                       "OPENROUTER_", "FIREWORKS_", "XAI_")
_FORWARDED_SUFFIXES = ("_API_KEY", "_API_BASE", "_BASE_URL", "_API_VERSION")


class WorkerSpec(BaseModel):
    """What a worker needs to run combinations of a batch: the run's settings (provenance resolved by the
    driver), its folder, the store every worker writes to, and the driver's model settings."""

    config: RunConfig
    out: str = Field(description="The run folder (the driver alone writes results.jsonl in it).")
    db: str = Field(description="The store URL every worker writes its episodes to.")
    environment: dict[str, str] = Field(
        default_factory=dict, description="Model and provider variables set in the worker before anything runs."
    )

    def apply(self, *, exact: bool = False) -> None:
        """Set the forwarded variables and register the scripted models OCCUSIM_SCRIPTED_MODELS names.
        `exact` also removes the forwarded kinds of variable that the driver does not have."""
        if exact:
            for name in [name for name in os.environ if _forwarded(name) and name not in self.environment]:
                del os.environ[name]
        os.environ.update(self.environment)
        for name in (part.strip() for part in os.environ.get("OCCUSIM_SCRIPTED_MODELS", "").split(",")):
            if name:
                importlib.import_module(name)


def forwarded_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of `environ` (default os.environ) that workers on other machines need."""
    environ = os.environ if environ is None else environ
    return {name: value for name, value in environ.items() if _forwarded(name)}


def _forwarded(name: str) -> bool:
    return name.startswith(_FORWARDED_PREFIXES) or name.endswith(_FORWARDED_SUFFIXES)


class WorkerReport(BaseModel):
    """One message from a worker process to the driver: a finished combination's row, or why it stopped."""

    worker: int
    row: ResultRow | None = None
    error: str | None = Field(default=None, description="Why the worker cannot go on (it exits after this).")
