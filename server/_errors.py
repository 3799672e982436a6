"""Typed episode errors whose messages are shown to the agent or the operator as they are."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

from occusim.environments import JsonInputError, OccusimError, ToolErrorType, Usage


class EpisodeError(OccusimError):
    """Base of every error an episode reports; `str(error)` is a message the caller can act on.

    `error_type` is the type of the tool error an agent reads in its place.
    """

    error_type: ClassVar[ToolErrorType] = ToolErrorType.EPISODE_ERROR


class UnknownToolError(EpisodeError):
    """The agent called a tool the scenario does not define. Raised, never recorded as a step."""

    error_type = ToolErrorType.UNKNOWN_TOOL

    def __init__(self, tool: str, valid: Iterable[str]) -> None:
        self.tool = tool
        self.valid = sorted(valid)
        super().__init__(f"unknown tool {tool!r}; this episode's tools are: {', '.join(self.valid)}")


class InvalidArgumentsError(EpisodeError):
    """The arguments break the tool's input schema.

    Recorded as an error step (no model call, no state change); `Episode.step` returns it as an error
    observation instead of raising.
    """

    error_type = ToolErrorType.INVALID_ARGUMENTS

    def __init__(self, tool: str, violations: Sequence[tuple[str, str]]) -> None:
        self.tool = tool
        self.violations = list(violations)
        lines = "; ".join(f"{path or '(arguments)'}: {message}" for path, message in self.violations)
        super().__init__(f"invalid arguments for {tool!r}: {lines}")


class RefusedInputError(EpisodeError):
    """Arguments or an answer that no episode record can hold: nested beyond the limit, text that is not
    valid Unicode or holds NUL, numbers that are not finite or too long.

    Raised before any model call, and nothing is recorded, so the episode stays readable everywhere.
    """

    error_type = ToolErrorType.INVALID_ARGUMENTS

    def __init__(self, error: JsonInputError) -> None:
        self.violations = list(error.problems)
        super().__init__(str(error))


class EpisodeClosedError(EpisodeError):
    """The episode was submitted or expired; raised by `step` and `submit`."""

    error_type = ToolErrorType.EPISODE_CLOSED

    def __init__(self, episode_id: str, status: str) -> None:
        self.episode_id = episode_id
        self.status = status
        super().__init__(f"episode {episode_id} is closed ({status}); no further calls are accepted")


class StepLimitError(EpisodeError):
    """The task's max_steps were used up; raised by `step`. The agent should submit its result."""

    error_type = ToolErrorType.STEP_LIMIT

    def __init__(self, episode_id: str, max_steps: int) -> None:
        self.episode_id = episode_id
        self.max_steps = max_steps
        super().__init__(
            f"episode {episode_id} reached its limit of {max_steps} tool calls; call submit_result with your answer"
        )


class SimulatorError(EpisodeError):
    """The world model gave no usable answer after its repairs, or its provider was unreachable.

    Never raised to the caller of `Episode.step`: the step is recorded and returned as an error
    observation, with the state untouched.
    """

    error_type = ToolErrorType.SIMULATOR_ERROR

    def __init__(self, message: str, *, attempts: int = 0, usage: Usage | None = None,
                 latency_ms: float = 0.0) -> None:
        self.attempts = attempts
        self.usage = usage if usage is not None else Usage()
        self.latency_ms = latency_ms
        super().__init__(message)


class SimulatorUnavailableError(SimulatorError):
    """The world model's provider could not be reached (after the gateway's retries): an outage, not a
    weak answer. Recorded like any SimulatorError, with the error type `simulator_unavailable`."""

    error_type = ToolErrorType.SIMULATOR_UNAVAILABLE


class SpendLimitError(EpisodeError):
    """A model call refused before it started: the tenant's spend today plus the spend held for its calls
    in flight would pass its daily cap. Nothing is recorded; answered 429 with `retry_after` over HTTP."""

    def __init__(self, message: str, retry_after: int) -> None:
        self.kind = "daily_cost_limit"
        self.retry_after = retry_after
        super().__init__(message)


class EpisodeNotFoundError(EpisodeError, LookupError):
    """No episode with this id exists in memory or in the store."""

    def __init__(self, episode_id: str) -> None:
        self.episode_id = episode_id
        super().__init__(f"no episode {episode_id!r} in the store; create one first")


class EpisodeExistsError(EpisodeError):
    """`create` was given an episode id that is already taken."""

    def __init__(self, episode_id: str) -> None:
        self.episode_id = episode_id
        super().__init__(f"an episode with id {episode_id!r} already exists; choose another id or open it")


class StepConflictError(EpisodeError):
    """Another process recorded this step index first (shared store); the episode was reloaded."""

    def __init__(self, episode_id: str, index: int) -> None:
        self.episode_id = episode_id
        self.index = index
        super().__init__(
            f"episode {episode_id} advanced elsewhere while step {index} was running; repeat the call"
        )


class StoreError(OccusimError):
    """The episode store cannot be used as it is; the message says which store and what to do."""


class StoreUnavailableError(StoreError):
    """The store could not be opened: the database server is down or unreachable, or the file cannot be made."""


class StoreVersionError(StoreError):
    """The database holds a store this release cannot open: written by a later release, or not a whole store."""
