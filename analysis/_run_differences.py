"""Every setting and provenance entry in which two runs differ: what, besides chance, explains their scores."""

from __future__ import annotations

from typing import Any

from ._provenance import provenance_changes
from ._results import RunConfig

# How a run was executed, not what its episodes are: these never change a score, so they are not listed.
EXECUTION_FIELDS = frozenset({"concurrency", "workers", "executor", "ray_address", "max_cost", "db", "cache"})


def run_differences(a: RunConfig, b: RunConfig) -> list[str]:
    """Each difference between two runs' settings (models, temperatures, seeds, faults, tasks, protocol...) and
    provenance (occusim version, prompt versions, judge settings, harness files), as `name: A vs B`."""
    lines = []
    for name in RunConfig.model_fields:
        if name in EXECUTION_FIELDS or name == "provenance":
            continue
        left, right = getattr(a, name), getattr(b, name)
        if left != right:
            lines.append(f"{name}: {_shown(left)} vs {_shown(right)}")
    return lines + [line.replace(" -> ", " vs ") for line in provenance_changes(a.provenance, b.provenance)]


def _shown(value: Any) -> str:
    return repr(value)
