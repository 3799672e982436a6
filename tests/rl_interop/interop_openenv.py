"""Real occusim episodes driven by OpenEnv's `GenericEnvClient` from its own virtualenv, under both package names.

`make rl-interop` installs `openenv` 0.10 and `openenv-core` 0.3 (pinned in requirements/) and runs this file
against a real `occusim serve --openenv` process; `make test` does not collect it. The client script plays
concurrent rollouts (reset, list_tools, a call, a call of a tool that does not exist, submit_result); the test
checks what the client saw against what the server stored: each reward is the episode's stored verdict.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _framework_run import VENVS, run_script

from occusim.server import Store
from tests.helpers import CHEST_PAIN, openenv_served

FRAMEWORKS = ["openenv", "openenv-core"]
TOOLS = ["list_patients", "get_patient", "set_priority", "submit_result"]
# A GRPO-like group: rollouts of one task that differ only by the policy (P1's priority), and one with its own seed.
PLANS: list[dict[str, Any]] = [
    {"reset": {}, "priority": 1},
    {"reset": {}, "priority": 3},
    {"reset": {"task_id": CHEST_PAIN}, "priority": 1},
    {"reset": {"task_id": CHEST_PAIN, "faults": "E0", "seed": 11}, "priority": 2},
]


@pytest.fixture
def framework_python() -> Callable[[str], Path]:
    def python(framework: str) -> Path:
        if not (VENVS / framework / ".installed-stamp").exists():
            pytest.skip(f"{framework} is not installed in {VENVS / framework}: run `make rl-interop`")
        return VENVS / framework / "bin" / "python"

    return python


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """`occusim serve --openenv` on the triage source, judged by the deterministic judge; yields its URL."""
    with openenv_served(tmp_path) as base:
        yield base


def play(python: Path, base: str, tmp_path: Path) -> dict[str, Any]:
    return run_script(python, "client_openenv.py", [base, json.dumps(PLANS)], tmp_path, env={}, timeout=300)


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_generic_env_client_rollouts_are_rewarded_with_the_verdicts(
    framework, framework_python, served, tmp_path
):
    report = await asyncio.to_thread(play, framework_python(framework), served, tmp_path)

    assert report["client"].startswith(f"{framework} ")
    rollouts = report["rollouts"]
    assert len({rollout["episode_id"] for rollout in rollouts}) == len(PLANS)
    async with Store(tmp_path / "episodes.db") as store:
        for rollout, plan in zip(rollouts, PLANS, strict=True):
            verdict = await store.load_judgment(rollout["episode_id"])
            record = await store.load_episode(rollout["episode_id"])
            assert rollout["task_id"] == CHEST_PAIN and rollout["tools"] == TOOLS
            assert rollout["called"] == {"ok": True, "patient_id": "P1", "priority": plan["priority"]}
            assert rollout["unknown_is_error"] is True and rollout["called_reward"] is None
            assert rollout["done"] is True and rollout["reward"] == verdict.score
            assert verdict.score == (1.0 if plan["priority"] == 1 else 0.0)
            assert [step.tool for step in record.steps] == ["set_priority"] and record.status == "judged"
            assert rollout["state"]["seed"] == plan["reset"].get("seed", 0) == record.faults.seed
