"""Cost of the per-step audit: CPU time per audited step on every golden step of the bundled catalog (the
largest states occusim ships) and on the triage test scenario, and the self-test's wall time and figures
(`--selftest`: its figures alone)."""

from __future__ import annotations

import os
import statistics
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import _checkout  # noqa: F401, E402

from occusim.environments import apply_json_patch, load_catalog  # noqa: E402
from occusim.server import audit_step, golden_steps, run_audit_selftest  # noqa: E402
from tests.helpers import TRIAGE, simulate_triage, triage_scenario  # noqa: E402

REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def report(label: str, samples: list[float]) -> None:
    print(f"{label:<34} steps={len(samples):>5}  p50={percentile(samples, 50):6.2f} ms  "
          f"p99={percentile(samples, 99):6.2f} ms  mean={statistics.fmean(samples):6.2f} ms")


def bundled() -> tuple[int, list[float]]:
    steps = list(golden_steps(load_catalog([])))
    afters = [apply_json_patch(step.before, step.patch) for step in steps]
    samples = []
    for _ in range(REPEATS):
        for step, after in zip(steps, afters, strict=True):
            started = time.process_time()
            audit_step(step.scenario, step.tool, step.arguments, state_before=step.before,
                       observation=step.observation, patch=step.patch, state_after=after,
                       earlier_observations=step.earlier)
            samples.append((time.process_time() - started) * 1000)
    return len(steps), samples


def triage() -> list[float]:
    scenario = triage_scenario()
    state = TRIAGE["initial_state"]
    calls = [("list_patients", {}), ("get_patient", {"patient_id": "P2"}),
             ("set_priority", {"patient_id": "P1", "priority": 2})]
    samples = []
    for _ in range(REPEATS * 100):
        for name, arguments in calls:
            answer = simulate_triage(name, arguments, state)
            after = apply_json_patch(state, answer["state_patch"])
            tool = scenario.tool(name)
            assert tool is not None
            started = time.process_time()
            audit_step(scenario, tool, arguments, state_before=state, observation=answer["observation"],
                       patch=answer["state_patch"], state_after=after)
            samples.append((time.process_time() - started) * 1000)
    return samples


def main() -> None:
    if "--selftest" in sys.argv[1:]:  # the self-test's figures alone, without the timings
        print(run_audit_selftest(0).summary())
        return
    print("audit_step CPU time, no model call; compare with Episode.step's server share (bench_step_overhead.py)")
    count, samples = bundled()
    report(f"bundled catalog ({count} golden steps)", samples)
    report("triage test scenario", triage())
    started = time.perf_counter()
    result = run_audit_selftest(0)
    print(f"self-test (seed 0): {result.steps} labelled steps in {time.perf_counter() - started:.1f} s")
    print(result.summary())


if __name__ == "__main__":
    main()
