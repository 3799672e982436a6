"""Run in a virtualenv with occusim[rl]: Gymnasium's check_env on OccusimEnv, then two scripted episodes.

Prints one JSON report on its last line. Argument: a folder for the triage source and the store.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import gymnasium
from gymnasium.utils.env_checker import check_env

from occusim.rl import OccusimEnv
from tests.helpers import CHEST_PAIN, passing_judge, write_triage_source
from tests.helpers.triage_worlds import TRIAGE_WORLD

folder = Path(sys.argv[1])
env = OccusimEnv(
    CHEST_PAIN,
    world_model=TRIAGE_WORLD,
    judge_model=passing_judge(),
    sources=[str(write_triage_source(folder))],
    db=str(folder / "episodes.db"),
)
check_env(env, skip_render_check=True)
episodes = []
for priority in (1, 2):
    _, info = env.reset(seed=5)
    call = {"tool": "set_priority", "arguments": {"patient_id": "P1", "priority": priority}}
    env.step(json.dumps(call))
    _, reward, terminated, _, end = env.step(
        json.dumps({"tool": "submit_result", "arguments": {"answer": "done"}})
    )
    episodes.append(
        {
            "episode_id": info["episode_id"],
            "reward": reward,
            "terminated": terminated,
            "judged": end["judged"],
        }
    )
env.close()
print(json.dumps({"gymnasium": gymnasium.__version__, "episodes": episodes}))
