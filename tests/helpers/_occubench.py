"""Where the real OccuBench release is read from: OCCUSIM_OCCUBENCH_PATH, or ../shared/occubench beside the
checkout."""

from __future__ import annotations

import os
from pathlib import Path


def occubench_sample_path() -> Path:
    configured = os.environ.get("OCCUSIM_OCCUBENCH_PATH")
    if configured:
        return Path(configured).resolve()
    return (Path(__file__).resolve().parents[2].parent / "shared" / "occubench").resolve()
