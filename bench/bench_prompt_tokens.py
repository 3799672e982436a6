"""Prompt tokens of an episode: tracked mode (state + last 6 calls) against history mode (all calls).

Three workloads: the runtime tests' triage scenario, run as real episodes with a scripted world model that
records every prompt; every bundled task, replaying its reference solution with the golden answers; and
every environment of the OccuBench sample (when present), answering each tool's example output. Tokens are counted with litellm's tokenizer
on the exact messages. Target: tracked <= 40% of history.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import _checkout  # noqa: F401, E402

from occusim.environments import StepRecord, apply_json_patch, load_catalog, load_source  # noqa: E402
from occusim.server import EpisodeService, Store, WorldModel  # noqa: E402
from tests.helpers import TRIAGE, TriageModel, occubench_sample_path, triage_catalog  # noqa: E402

OCCUBENCH = occubench_sample_path()

STEPS = 16
CALLS = [
    ("list_patients", {}),
    ("get_patient", {"patient_id": "P1"}),
    ("set_priority", {"patient_id": "P1", "priority": 1}),
    ("get_patient", {"patient_id": "P2"}),
]
COUNTING_MODEL = "gpt-4o"


def _long_task() -> dict:
    """The triage task with room for 16 calls."""
    task = dict(TRIAGE["tasks"][0], id="triage-desk/long", max_steps=STEPS)
    return task


async def prompt_tokens(mode: str) -> tuple[int, int, int]:
    import litellm

    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "bench.db")
        await store.init()
        model = TriageModel()
        catalog = triage_catalog(tasks=[_long_task()])
        service = EpisodeService(catalog, store, world_model=model.model)
        episode = await service.create("triage-desk/long", mode=mode)
        for index in range(STEPS):
            tool, arguments = CALLS[index % len(CALLS)]
            await episode.step(tool, arguments)
        await store.close()
    counts = [litellm.token_counter(model=COUNTING_MODEL, messages=messages) for messages, _ in model.requests]
    return sum(counts), counts[0], counts[-1]


def rendered_prompt_tokens(scenario, mode: str, steps: int = STEPS) -> int:
    """Prompt tokens of `steps` calls cycling through the tools, each answered with its example output."""
    import litellm

    simulator = WorldModel("scripted/none")
    history: list[StepRecord] = []
    total = 0
    for index in range(steps):
        tool = scenario.tools[index % len(scenario.tools)]
        messages = simulator.messages(scenario, tool, {}, state=scenario.initial_state, history=history, mode=mode,
                                      initial_state=scenario.initial_state)
        total += litellm.token_counter(model=COUNTING_MODEL, messages=messages)
        observation = tool.example_output if isinstance(tool.example_output, dict) else {"result": "ok"}
        history.append(StepRecord(index=index, tool=tool.name, observation=observation))
    return total


def catalog_prompt_tokens(catalog, task, mode: str, steps: int = STEPS) -> int:
    """Prompt tokens of `steps` calls replaying a bundled task's reference solution (cycled), golden answers."""
    import litellm

    scenario = catalog.scenario_of(task)
    simulator = WorldModel("scripted/none")
    state = initial = catalog.initial_state(task)
    history: list[StepRecord] = []
    total = 0
    for index in range(steps):
        step = task.reference_solution[index % len(task.reference_solution)]
        messages = simulator.messages(scenario, scenario.tool(step.tool), step.arguments, state=state,
                                      history=history, mode=mode, initial_state=initial)
        total += litellm.token_counter(model=COUNTING_MODEL, messages=messages)
        if index < len(task.reference_solution):  # a cycled replay repeats reads; its writes may not apply
            state = apply_json_patch(state, step.state_patch)
        history.append(StepRecord(index=index, tool=step.tool, arguments=step.arguments, observation=step.observation))
    return total


def catalog_ratios(steps: int) -> list[float]:
    catalog = load_catalog()
    return [catalog_prompt_tokens(catalog, task, "tracked", steps) / catalog_prompt_tokens(catalog, task, "history", steps)
            for task in catalog.tasks.values() if task.reference_solution]


def occubench_ratios(steps: int) -> list[float]:
    if not OCCUBENCH.is_dir():
        return []
    ratios = []
    for scenario, _origin in load_source(f"occubench:{OCCUBENCH}"):
        ratios.append(rendered_prompt_tokens(scenario, "tracked", steps) /
                      rendered_prompt_tokens(scenario, "history", steps))
    return ratios


async def main() -> None:
    import statistics

    tracked, tracked_first, tracked_last = await prompt_tokens("tracked")
    history, history_first, history_last = await prompt_tokens("history")
    print(f"Prompt tokens for a {STEPS}-step triage episode (counted as {COUNTING_MODEL}):")
    print(f"  tracked : total={tracked:>7}  first call={tracked_first:>5}  last call={tracked_last:>5}")
    print(f"  history : total={history:>7}  first call={history_first:>5}  last call={history_last:>5}")
    ratio = tracked / history
    print(f"  tracked / history = {ratio:.0%} (target <= 40%: {'met' if ratio <= 0.40 else 'NOT met'})")
    for steps in (STEPS, 32):
        ratios = catalog_ratios(steps)
        print(f"Bundled catalog, {len(ratios)} tasks replaying their reference solutions, {steps} calls each: "
              f"tracked / history median={statistics.median(ratios):.0%} min={min(ratios):.0%} max={max(ratios):.0%}")
    for steps in (STEPS, 30):
        ratios = occubench_ratios(steps)
        if ratios:
            print(f"OccuBench sample, {len(ratios)} environments, {steps} calls each: tracked / history "
                  f"median={statistics.median(ratios):.0%} min={min(ratios):.0%} max={max(ratios):.0%}")


if __name__ == "__main__":
    asyncio.run(main())
