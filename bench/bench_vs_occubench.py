"""Side by side, in one run: OccuBench's reference harness (`python -m occubench.evaluate`) and `occusim run
--protocol occubench` on the same OccuBench tasks, E0, response cache off, against one fake OpenAI-compatible
endpoint (bench/_fake_openai.py, its own process) that answers every call after a fixed latency.

Each episode makes --tool-calls tool calls: 2N+1 sequential agent/world-model calls, then 3 verifier votes
at once, so an episode cannot take less than (2N+2) x latency (the latency bound). For each concurrency it
prints episodes per hour, the share of the bound reached, and the client CPU per episode of the whole
process (start-up included, from wait4), with the ratios occusim / OccuBench. Both run from compiled
bytecode, as installed packages do (compile_both). --profile adds where occusim's CPU goes per component,
sampled with py-spy (`pip install py-spy`).

    python bench/bench_vs_occubench.py                        # concurrency 64 and 256
    python bench/bench_vs_occubench.py --concurrency 64 --paths lean,litellm --profile
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import _checkout  # noqa: F401

from occusim.occubench import load_harness
from tests.helpers import occubench_sample_path

KEY = "sk-bench-0123456789"
COMPONENTS = [
    # (component, substrings of a frame's file path); a sample goes to the innermost frame that matches.
    ("gateway", ("/occusim/llm/", "/llm/_", "/litellm/", "/openai/", "/httpx/", "/httpcore/", "/h11/", "/aiohttp/",
                 "/yarl/", "/multidict/")),
    ("MCP", ("/mcp/", "/mcp_types/", "_mcp_", "/anyio/", "/sse_starlette/", "/starlette/")),
    ("store", ("/sqlalchemy/", "/aiosqlite/", "/sqlite3/", "/alembic/", "_store", "_tables", "_record_table")),
    ("validation", ("/pydantic/", "/pydantic_core/", "/jsonschema/", "/referencing/", "/jsonpatch", "/jsonpointer")),
    ("judge", ("/judge/",)),
    ("episode and agent", ("/server/", "/clients/", "/environments/")),
    ("event loop", ("/asyncio/", "/selectors.py", "/threading.py", "/concurrent/")),
]


@dataclass
class Run:
    harness: str
    concurrency: int
    episodes: int
    finished: int
    wall_s: float
    cpu_s: float

    @property
    def per_hour(self) -> float:
        return self.finished / self.wall_s * 3600.0

    @property
    def cpu_ms(self) -> float:
        return self.cpu_s / max(1, self.finished) * 1000.0


def occubench_world_tags(bench: str) -> tuple[Path, str, str] | None:
    """The OccuBench sample and the tags its harness expects around a world-model observation (opening,
    closing); None, having said that `bench` is skipped, where there is no OccuBench checkout."""
    sample = occubench_sample_path()
    if not (sample / "occubench").is_dir():
        print(f"{bench}: skipped, no OccuBench checkout at {sample} (set OCCUSIM_OCCUBENCH_PATH)")
        return None
    pattern = load_harness(f"occubench:{sample}").world_model_observation_pattern
    opening, _, closing = pattern.partition("(.*?)")
    return sample, opening, closing


def latency_bound(tool_calls: int, latency: float) -> float:
    """The least time an episode can take: 2N+1 sequential agent/world-model calls, then the verifier votes."""
    return (2 * tool_calls + 2) * latency


def sample_copy(folder: Path, episodes: int) -> Path:
    """The OccuBench sample with its tasks repeated (new task ids) up to `episodes` tasks, and a copy of the
    harness's code compiled beside it (see compile_both)."""
    sample = occubench_sample_path()
    copy = folder / f"occubench-{episodes}"
    copy.mkdir()
    for name in ("world_model_configs", "task_scenario_all_pool.jsonl"):
        (copy / name).symlink_to(sample / name)
    shutil.copytree(sample / "occubench", copy / "occubench", ignore=shutil.ignore_patterns("__pycache__"))
    compile_both(copy / "occubench")
    tasks = [json.loads(line) for line in (sample / "eval_benchmark_solvable.jsonl").read_text().splitlines() if line]
    rows = []
    for index in range(episodes):
        task = dict(tasks[index % len(tasks)])
        task["task_id"] = int(task["task_id"]) + 100000 * (index // len(tasks))
        rows.append(json.dumps(task, ensure_ascii=False))
    (copy / "eval_benchmark_solvable.jsonl").write_text("\n".join(rows) + "\n")
    return copy


def compile_both(harness_code: Path) -> None:
    """Compile both harnesses' modules before they are timed, as an installed package is: pip compiles what it
    installs, and Python caches what it imports from a writable checkout. Without this, a read-only checkout
    (OccuBench's, beside ours) or PYTHONDONTWRITEBYTECODE would make every run compile its modules again (about
    0.1 s of occusim's start-up). The installed dependencies were compiled by pip."""
    roots = [harness_code]
    for name in ("occusim", *(f"occusim.{package}" for package in ("environments", "llm", "server", "judge", "clients"))):
        spec = importlib.util.find_spec(name)
        roots += [Path(location) for location in (spec.submodule_search_locations or [])] if spec else []
    subprocess.run([sys.executable, "-m", "compileall", "-q", *map(str, roots)], check=True, stdout=subprocess.DEVNULL)


def measured(command: list[str], env: dict[str, str], cwd: Path, log: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system, children included) and exit code of one process."""
    with log.open("w") as output:
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, cwd=cwd, stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, process.returncode


def occubench_command(sample: Path, url: str, concurrency: int, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "occubench.evaluate", "--agent-model", "fake-agent", "--world-model", "fake-world",
        "--verifier-model", "fake-verifier", "--env-mode", "E0", "--api-key", KEY, "--base-url", url,
        "--max-workers", str(concurrency), "--eval-data", str(sample / "eval_benchmark_solvable.jsonl"),
        "--scenario-pool", str(sample / "task_scenario_all_pool.jsonl"),
        "--config-dir", str(sample / "world_model_configs"), "--output-dir", str(out),
    ]


def occusim_command(sample: Path, concurrency: int, out: Path, workers: int | None = None) -> list[str]:
    command = [
        sys.executable, "-m", "occusim", "run", "--protocol", "occubench", "--source", f"occubench:{sample}",
        "--tasks", "occubench/*", "--faults", "E0", "--agent-model", "openai/fake-agent",
        "--world-model", "openai/fake-world", "--judge-model", "openai/fake-verifier",
        "--concurrency", str(concurrency), "--no-cache", "--no-progress", "--out", str(out),
    ]
    return command + (["--workers", str(workers)] if workers else [])


def occusim_env(url: str, path: str) -> dict[str, str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OCCUSIM_NO_CACHE": "1",
           "OPENAI_API_BASE": url, "OPENAI_API_KEY": KEY}
    env["OCCUSIM_LEAN_HTTP"] = "1" if path == "lean" else "0"
    return env


def finished_rows(out: Path, harness: str) -> int:
    lines = [line for path in out.rglob("results.jsonl") for line in path.read_text().splitlines() if line]
    if harness == "OccuBench":
        return len(lines)
    return sum(1 for line in lines if json.loads(line).get("status") == "ok")


def run_one(harness: str, sample: Path, url: str, concurrency: int, episodes: int, folder: Path,
            workers: int | None) -> Run:
    out = folder / f"{harness}-{concurrency}"
    if harness == "OccuBench":
        command = occubench_command(sample, url, concurrency, out)
        env = {**os.environ, "PYTHONPATH": str(sample), "OPENAI_API_KEY": KEY}
    else:
        path = harness.split()[-1].strip("()")
        command = occusim_command(sample, concurrency, out, workers)
        env = occusim_env(url, path)
    wall, cpu, code = measured(command, env, folder, folder / f"{harness}-{concurrency}.log")
    if code != 0:
        tail = (folder / f"{harness}-{concurrency}.log").read_text()[-3000:]
        raise SystemExit(f"{harness} exited with {code}:\n{tail}")
    return Run(harness, concurrency, episodes, finished_rows(out, harness), wall, cpu)


def profile(sample: Path, url: str, concurrency: int, folder: Path) -> Counter[str]:
    """Samples of `occusim run` per component (py-spy, every thread, idle time left out)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    raw = folder / "profile.txt"
    # --gil: only the thread holding the GIL is sampled, so threads waiting on a queue are not counted.
    command = [spy, "record", "--rate", "200", "--format", "raw", "--threads", "--gil", "-o", str(raw), "--",
               *occusim_command(sample, concurrency, folder / "profiled", workers=1)]
    subprocess.run(command, env=occusim_env(url, "lean"), cwd=folder, capture_output=True, check=True)
    totals: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        totals[_component(frames)] += int(count)
    return totals


# Stacks under these frames are start-up (imports, loading the scenarios), whatever runs inside them.
START_UP = ("importlib", "lazy_loader", "load_catalog", "load_source", "load_protocol")


def _component(frames: list[str]) -> str:
    if any(marker in frame for frame in frames for marker in START_UP):
        return "start-up (imports, scenario loading)"
    for frame in reversed(frames):
        # py-spy writes "function (path/to/file.py:line)"; paths inside site-packages lose their prefix.
        frame = "/" + frame.rpartition("(")[2]
        for name, needles in COMPONENTS:
            if any(needle in frame for needle in needles):
                return name
    return "other"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", default="64,256", help="comma-separated (default 64,256)")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per answer (default 0.5)")
    parser.add_argument("--tool-calls", type=int, default=16, help="tool calls per episode (default 16)")
    parser.add_argument("--paths", default="lean", help="occusim gateway paths to run: lean, litellm (default lean)")
    parser.add_argument("--workers", type=int, help="occusim run --workers (default: occusim's own default)")
    parser.add_argument("--skip-occubench", action="store_true", help="run occusim only")
    parser.add_argument("--profile", action="store_true", help="also sample occusim's CPU per component")
    parser.add_argument("--keep", type=Path, help="copy the logs and the raw profile to this folder")
    args = parser.parse_args()
    found = occubench_world_tags("bench_vs_occubench")
    if found is None:
        return 0
    sample, opening, closing = found
    bound = latency_bound(args.tool_calls, args.latency)
    harnesses = ([] if args.skip_occubench else ["OccuBench"]) + [
        f"occusim ({path})" for path in args.paths.split(",") if path
    ]

    with tempfile.TemporaryDirectory(prefix="bench-vs-occubench-") as name:
        folder = Path(name)
        endpoint = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("_fake_openai.py")), "--latency", str(args.latency),
             "--tool-calls", str(args.tool_calls), "--tags", opening, closing],
            stdout=subprocess.PIPE, text=True,
        )
        try:
            assert endpoint.stdout is not None
            url = endpoint.stdout.readline().strip()
            runs: list[Run] = []
            for concurrency in (int(c) for c in args.concurrency.split(",")):
                episodes = max(64, concurrency)
                sample_c = sample_copy(folder, episodes)
                for harness in harnesses:
                    run = run_one(harness, sample_c, url, concurrency, episodes, folder, args.workers)
                    runs.append(run)
                    ideal = min(concurrency, episodes) / bound * 3600.0
                    print(f"{harness:<18} c={concurrency:<4} {run.finished}/{episodes} episodes in "
                          f"{run.wall_s:6.1f} s: {run.per_hour:8,.0f} episodes/h = {run.per_hour / ideal:5.1%} of "
                          f"the latency bound ({ideal:,.0f}/h); client CPU {run.cpu_ms:6.1f} ms/episode", flush=True)
            _print_ratios(runs)
            if args.profile:
                copy = folder / "occubench-64"
                totals = profile(copy if copy.exists() else sample_copy(folder, 64), url, 64, folder)
                whole = sum(totals.values()) or 1
                print("\noccusim run (lean, c=64) CPU samples by component:")
                for component, count in totals.most_common():
                    print(f"  {component:<38} {count / whole:6.1%}  ({count} samples)")
        finally:
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                for kept in [*folder.glob("*.log"), *folder.glob("profile.txt")]:
                    shutil.copy(kept, args.keep / kept.name)
            endpoint.terminate()
            endpoint.wait()
    return 0


def _print_ratios(runs: list[Run]) -> None:
    reference = {run.concurrency: run for run in runs if run.harness == "OccuBench"}
    if not reference:
        return
    print("\nratios occusim / OccuBench (same run, same endpoint):")
    for run in runs:
        base = reference.get(run.concurrency)
        if run.harness == "OccuBench" or base is None:
            continue
        print(f"  {run.harness:<18} c={run.concurrency:<4} episodes/h {run.per_hour / base.per_hour:5.2f}x   "
              f"client CPU per episode {run.cpu_ms / base.cpu_ms:5.2f}x")


if __name__ == "__main__":
    sys.exit(main())
