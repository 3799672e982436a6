"""Allows `python -m occusim`."""

from occusim.clients.cli import main

raise SystemExit(main())
