"""The root of occusim's own errors: each class says what the user must do and how a command exits on it."""

from __future__ import annotations

from typing import ClassVar


class OccusimError(Exception):
    """An error of occusim's that its user can act on; catch this one class for all of them.

    `exit_code` is what a command exits with when the error ends it (2: the input, a setting or a file
    must change; 1: the work itself failed), and `user_message()` what it prints.
    """

    exit_code: ClassVar[int] = 2

    def user_message(self) -> str:
        """The message a command prints: the error's own text, which names the file, field or flag."""
        return str(self)
