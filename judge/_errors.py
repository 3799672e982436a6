"""Typed errors of the judge: each says what could not be judged and what to change."""

from __future__ import annotations

from occusim.environments import OccusimError


class JudgeError(OccusimError):
    """An episode could not be judged: the task does not fit the record, or the request is invalid."""


class JudgeModelError(JudgeError):
    """The judge model could not be reached or kept failing; nothing was scored."""
