"""Run in TRL's virtualenv: bind an occusim TRL environment class as TRL does and play two scripted rollouts.

Tools are found as GRPOTrainer finds them (the public functions of the environment's class) and their schemas
made by transformers' `get_json_schema`, as TRL renders them into the prompt; each rollout is `reset(**row)`,
tool calls by name with keyword arguments, then `get_reward()`. Prints one JSON report on its last line.
Argument: a folder for the triage source and the store.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import trl
from transformers.utils import get_json_schema

from occusim.rl import RolloutPool
from occusim.rl.trl import environment_class
from tests.helpers import CHEST_PAIN, passing_judge, write_triage_source
from tests.helpers.triage_worlds import TRIAGE_WORLD

folder = Path(sys.argv[1])
pool = RolloutPool(
    sources=[write_triage_source(folder)],
    world_model=TRIAGE_WORLD,
    judge_model=passing_judge(),
    db=folder / "episodes.db",
)
Env = environment_class(CHEST_PAIN, pool=pool)
environment = Env()
methods = {
    name: getattr(environment, name)
    for name, _ in inspect.getmembers(Env, predicate=inspect.isfunction)
    if name not in ("reset", "get_reward") and not name.startswith("_")
}
schemas = {name: get_json_schema(method) for name, method in methods.items()}
rollouts = []
for priority in (1, 2):
    brief = environment.reset(task_id=CHEST_PAIN, prompt=[{"role": "user", "content": "triage"}])
    tool_dict = {method.__name__: method for method in methods.values()}
    results = [
        tool_dict["set_priority"](**{"patient_id": "P1", "priority": priority}),
        tool_dict["submit_result"](**{"answer": "P1 set"}),
    ]
    rollouts.append(
        {
            "brief": brief,
            "results": results,
            "reward": environment.get_reward(),
            "episode_id": environment._rollout.id,
        }
    )
# Every bundled scenario binds too: a class per scenario, and a schema transformers can make for each tool.
bound, unbound = [], {}
for scenario in pool.catalog.scenarios.values():
    if not scenario.tasks or scenario.id == pool.catalog.scenario_of(CHEST_PAIN).id:
        continue
    try:
        instance = environment_class(scenario.tasks[0].id, pool=pool)()
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction):
            if name not in ("reset", "get_reward") and not name.startswith("_"):
                get_json_schema(getattr(instance, name))
        bound.append(scenario.id)
    except Exception as error:  # reported, not raised: the test lists every scenario that fails
        unbound[scenario.id] = f"{type(error).__name__}: {error}"[:300]
pool.close()
print(json.dumps({"trl": trl.__version__, "schemas": schemas, "rollouts": rollouts, "catalog_bound": bound,
                  "catalog_unbound": unbound}))
