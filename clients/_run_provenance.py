"""This checkout's provenance: its occusim version, the version of each role's prompts and the judge settings."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from occusim.analysis import Provenance, text_version

# Modules whose text is a prompt or decides what a model is asked (read, never imported: the server
# package is not needed to write a run.json, and its prompts have no version constant of their own).
_PROMPT_MODULES = {"world_model": "occusim.server._simulator_prompt", "fault_injection": "occusim.server._faults"}


def _module_version(name: str) -> str:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return "unknown"
    return text_version(Path(spec.origin).read_bytes())


def prompt_versions() -> dict[str, str]:
    """The version of each role's prompt templates in this checkout of occusim."""
    from occusim.judge import PROMPT_VERSION

    from ._conversation import SYSTEM_PROMPT

    versions = {"agent": text_version(SYSTEM_PROMPT)}
    versions.update({role: _module_version(module) for role, module in _PROMPT_MODULES.items()})
    versions["judge"] = PROMPT_VERSION
    return versions


def current_provenance(given: Provenance | None = None) -> Provenance:
    """`given` (protocol, harness files) completed with this occusim's version and prompt versions."""
    from occusim import __version__
    from occusim.judge import JudgeSettings

    base = given or Provenance()
    return base.model_copy(update={"occusim_version": __version__, "prompt_versions": prompt_versions(),
                                   "judge_settings": JudgeSettings.from_env().model_dump(mode="json")})
