"""Allows `python -m occusim`."""

from occusim.clients.cli import entry

entry()
