"""Typed errors for scenario files: each names the file, the JSON path and what was expected."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic_core import PydanticCustomError

from ._occusim_error import OccusimError

# The error type of a document whose parts contradict each other though each is valid on its own (duplicate
# ids, a task inside another scenario): no schema can state such a rule, so the REST layer answers it with 409.
INCONSISTENT = "inconsistent"


def inconsistent(message: str) -> PydanticCustomError:
    """A validation error, raised by a model's cross-field check, for parts that contradict each other."""
    return PydanticCustomError(INCONSISTENT, "{reason}", {"reason": message})


def format_location(location: Iterable[str | int]) -> str:
    """Render a pydantic/jsonschema location as `tasks[2].reference_solution[1].arguments`."""
    out = ""
    for part in location:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


class ScenarioError(OccusimError):
    """One problem in one scenario source, printed as `file: json.path: message`."""

    def __init__(self, source: str, location: Sequence[str | int] | str, message: str) -> None:
        self.source = source
        self.location = location if isinstance(location, str) else format_location(location)
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [self.source]
        if self.location:
            parts.append(self.location)
        parts.append(self.message)
        return ": ".join(parts)


class ScenarioErrors(OccusimError):
    """Several problems at once, so a user sees every error in one run."""

    def __init__(self, errors: list[ScenarioError]) -> None:
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


class UnknownTaskError(OccusimError, LookupError):
    """A task or scenario id that no loaded source defines."""

    def __init__(self, kind: str, ident: str, known: Iterable[str]) -> None:
        import difflib

        close = difflib.get_close_matches(ident, list(known), n=3)
        hint = f" Did you mean: {', '.join(close)}?" if close else " Run `occusim list` to see what is loaded."
        super().__init__(f"unknown {kind} {ident!r}.{hint}")
        self.ident = ident
