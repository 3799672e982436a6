"""The garbage collector for long-running commands: what start-up builds is kept out of its sight.

A command allocates at start-up many objects that live to its end (modules, models, schemas: millions once
litellm is imported) and many short-lived ones per call. Left in the collected generations, every full
collection scans them all again: in the hosted service that stalled the event loop, and every request
waiting on it, for hundreds of milliseconds at a time.
"""

from __future__ import annotations

import gc


def collect_less() -> None:
    """Turn the collector off while modules load (scanning them again and again cost about a tenth of a
    start-up's CPU), and afterwards collect the young generation less often."""
    gc.disable()
    gc.set_threshold(50_000, 20, 20)


def freeze_start_up() -> None:
    """Move what start-up built out of the collector's sight for the rest of the process, then turn it on."""
    gc.freeze()
    gc.enable()
