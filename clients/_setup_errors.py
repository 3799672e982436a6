"""Failures of the run's configuration found inside an episode's failure: the setting each one points at."""

from __future__ import annotations

from occusim.environments import OccusimError
from occusim.llm import CONFIGURATION_ERROR, ModelConfig, ProviderConfigError, setting_to_check

# The kinds a ProviderConfigError's summary names, as a world model outage's step records them.
_KINDS = ("endpoint unreachable", "key refused", "key missing", "model unknown")


class WorldModelSetupError(OccusimError):
    """The world model's provider refused the episode's calls for a configuration reason."""

    def __init__(self, world_model: str, setting: str) -> None:
        self.setting = f"world model {world_model!r}: {setting}"
        super().__init__(self.setting)


def configuration_setting(error: BaseException) -> str | None:
    """The setting to check when a configuration error lies behind `error` (its causes, or a group's members)."""
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ProviderConfigError):
            return f"model {current.model!r}: {current.setting}"
        if isinstance(current, WorldModelSetupError):
            return current.setting
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(inner for inner in (current.__cause__, current.__context__) if inner is not None)
    return None


def world_model_setup_error(step_error: str | None, world_model: str) -> WorldModelSetupError | None:
    """The configuration error a world-model outage step recorded (its summary names the kind), with the
    setting resolved here, where the run's environment is; None for an outage of any other kind."""
    if not step_error or CONFIGURATION_ERROR not in step_error:
        return None
    kind = next((kind for kind in _KINDS if f"{CONFIGURATION_ERROR}: {kind}" in step_error), None)
    if kind is None:
        return None
    config = ModelConfig.for_role("world_model", model=world_model)
    return WorldModelSetupError(world_model, setting_to_check(kind, config, "world_model"))
