"""`occusim run`: evaluate an agent on tasks x fault modes x trials, over MCP, into a resumable run folder."""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from typing import TYPE_CHECKING, cast

from ._catalog_options import add_catalog_options, add_task_option, report_catalog_problems
from ._collector import collect_less, freeze_start_up

# Concurrent episodes per worker process by default. Measured with bench/bench_vs_occubench.py (0.5 s per model
# answer, 2 cores): one process reached 89.4 % of the latency bound at 64 episodes at once against 87.1 % for
# two, the same at 128, and two did better at 256 (82.4 % against 80.4 %).
EPISODES_PER_WORKER = 128

if TYPE_CHECKING:
    from occusim.environments import FaultMode
    from occusim.llm import ModelConfig

DESCRIPTION = """\
Run every (task, fault mode, trial) combination as a real MCP episode, concurrently, judge each one, and
append one row per finished episode to OUT/results.jsonl (the settings go to OUT/run.json, the episodes
to OUT/episodes.db unless --db is given). Running again with the same --out skips the combinations
already scored, so an interrupted run resumes where it stopped.

Infrastructure failures (a provider outage of any model, a broken transport, an episode past
--episode-timeout) are retried up to --infra-retries times, then recorded as infra_error: they are never
counted as agent failures and are reported separately. A configuration error (an endpoint that refuses
the connection or whose host does not resolve, a key missing or refused, an unknown model) is not retried:
the run stops at the first, names the URL or variable to check, and exits with status 3, as does a run whose
every episode was an infrastructure error.

Episodes run in --workers processes on this machine, sharing --concurrency, the store and the run folder.
By default one process runs up to 128 episodes at once, and each further 128 get a process of their own, up
to one per core: one process waiting on the network keeps that many busy for a fraction of a core, and each
process costs a start-up (see bench/bench_vs_occubench.py). --executor ray spreads them over the nodes of a
Ray cluster instead. Either way
this process alone writes OUT/results.jsonl, and a worker that dies has its episodes run again.
--max-cost stops starting episodes once this invocation has spent that much (run again to go on), and
--dry-run prints the combinations and their estimated cost without running anything.

Models are litellm model strings. --agent-model reference-replay replays each task's reference solution
instead of asking a model (a baseline and a check of the setup). Unset models fall back to
OCCUSIM_AGENT_MODEL / OCCUSIM_WORLD_MODEL_MODEL / OCCUSIM_JUDGE_MODEL, then OCCUSIM_MODEL, then the
small local model (for offline smoke runs only).
"""

EPILOG = """\
examples:
  occusim run --agent-model openai/gpt-4.1-mini --world-model openai/gpt-4.1 --judge-model openai/gpt-4.1 \\
      --tasks healthcare-life-sciences --faults E0,E1,E2,E3 --trials 3 --concurrency 16 --out runs/gpt41mini
  occusim run --agent-model reference-replay --tasks 'emergency-dispatcher/*' --faults E0,E2 --out runs/replay
  occusim run --agent-model openai/gpt-4.1-mini --world-model openai/gpt-4.1 --judge-model openai/gpt-4.1 \
      --tasks all --trials 5 --dry-run --out runs/big
  occusim run ... --workers 8 --concurrency 128 --max-cost 50 --out runs/big
  occusim run ... --executor ray --ray-address ray://head:10001 --db postgresql+asyncpg://u@db/occusim --out runs/big
  occusim report runs/gpt41mini --format html --out runs/gpt41mini/report.html
"""

FAULT_MODES = ("E0", "E1", "E2", "E3", "prompt")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    models = parser.add_argument_group("models")
    models.add_argument("--agent-model", metavar="A", help="the agent under test, or 'reference-replay'")
    models.add_argument("--world-model", metavar="W", help="the model simulating the tools")
    models.add_argument("--judge-model", metavar="J", help="the model judging llm rubric items")
    models.add_argument("--judge-votes", type=int, default=3, metavar="K", help="judge votes per check (default 3)")
    models.add_argument("--exemplars", metavar="DIR",
                        help="also show the judge the exemplar files in DIR (as judge-agreement --write-exemplars "
                             "writes them)")
    models.add_argument("--agent-temperature", type=float, default=1.0, metavar="T",
                        help="agent sampling temperature; each trial sends its own seed (default 1)")
    work = parser.add_argument_group("what to run")
    add_task_option(work)
    add_catalog_options(work, bundled_flag=False)
    work.add_argument("--faults", default="E0", metavar="MODES",
                      help="comma-separated fault modes from E0,E1,E2,E3,prompt (default E0)")
    work.add_argument("--fault-count", type=int, default=2, metavar="N", help="faults per episode (default 2)")
    work.add_argument("--fault-duration", type=int, default=2, metavar="N",
                      help="consecutive calls each fault lasts (default 2)")
    work.add_argument("--fault-window", type=int, default=None, metavar="N",
                      help="calls over which the faults are spread (default: the task's expected length, at least "
                           "twice the calls the faults need; see docs/metrics.md)")
    work.add_argument("--trials", type=int, default=1, metavar="K", help="trials per task and fault mode (default 1)")
    work.add_argument("--seed", type=int, default=0, metavar="S", help="base seed; trial t uses S+t (default 0)")
    work.add_argument("--mode", choices=["tracked", "history"], default="tracked",
                      help="simulation mode (default tracked)")
    work.add_argument("--protocol", choices=["native", "occubench"], default="native",
                      help="native (default): occusim's agent, world model and judge; occubench: OccuBench's "
                           "harness, its prompts read from the --source occubench:PATH checkout")
    work.add_argument("--outage-policy", choices=["infra", "harness"], default="infra",
                      help="infra (default): a provider that stays down makes the episode an infra_error, retried "
                           "and never scored; harness (--protocol occubench): an agent or verifier outage is scored "
                           "as OccuBench's harness scores it, and the row's `outage` says so")
    how = parser.add_argument_group("how to run")
    how.add_argument("--out", required=True, metavar="DIR", help="run folder (created; reused to resume)")
    how.add_argument("--concurrency", type=int, default=4, metavar="N",
                     help="episodes at once, over every worker (default 4)")
    how.add_argument("--workers", type=int, metavar="N",
                     help=f"worker processes sharing the concurrency (default: one per {EPISODES_PER_WORKER} "
                          "concurrent episodes, up to one per core; 1 with the local or scripted models; with "
                          "--executor ray, one Ray actor per CPU of the cluster)")
    how.add_argument("--executor", choices=["local", "ray"], default="local",
                     help="local (default): processes on this machine; ray: actors on a Ray cluster "
                          "(pip install 'occusim[ray]')")
    how.add_argument("--ray-address", metavar="ADDRESS",
                     help="the Ray cluster to join (e.g. ray://head:10001 or auto); default a new local one")
    how.add_argument("--max-cost", type=float, metavar="USD",
                     help="stop starting episodes once this invocation has spent USD on models (litellm prices)")
    how.add_argument("--dry-run", action="store_true",
                     help="print the combinations to run and their estimated cost, then exit")
    how.add_argument("--transport", choices=["inprocess", "stdio", "http"], default="inprocess",
                     help="inprocess (default), stdio (one `occusim serve` per episode) or http (a local service)")
    how.add_argument("--episode-timeout", type=float, default=900.0, metavar="S",
                     help="seconds per episode, judging included (default 900)")
    how.add_argument("--infra-retries", type=int, default=2, metavar="N",
                     help="extra attempts after an infrastructure error (default 2)")
    how.add_argument("--db", metavar="URL", help="episode store (default OUT/episodes.db)")
    how.add_argument("--no-cache", action="store_true", help="do not reuse cached model responses")
    how.add_argument("--no-progress", action="store_true", help="no progress bar")
    how.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"],
                     help="log detail on stderr (default warning)")


def _modes(text: str) -> list[FaultMode]:
    modes = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [mode for mode in modes if mode not in FAULT_MODES]
    if unknown or not modes:
        raise ValueError(f"--faults {text!r}: use a comma-separated list of {', '.join(FAULT_MODES)}")
    return cast("list[FaultMode]", list(dict.fromkeys(modes)))


def _configs(args: argparse.Namespace) -> list[ModelConfig]:
    """The agent, world-model and judge models, from the flags or the environment."""
    from occusim.llm import ModelConfig

    return [ModelConfig.for_role(role, model=model) for role, model in
            (("agent", args.agent_model), ("world_model", args.world_model), ("judge", args.judge_model))]


def _workers(args: argparse.Namespace, models: list[str]) -> int | None:
    """--workers, or its default: one per EPISODES_PER_WORKER concurrent episodes up to one per core, but one
    process for models that live in this process."""
    if args.workers is not None:
        if args.workers < 1:
            raise ValueError(f"--workers {args.workers}: use 1 or more")
        return int(args.workers)
    if args.executor == "ray":
        return None
    in_process = any(model.startswith(("scripted/", "local")) for model in models)
    # The cores this process may run on (a container's CPU set), not every core of the machine.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return 1 if in_process else max(1, min(cores, math.ceil(args.concurrency / EPISODES_PER_WORKER)))


def _start_workers_early(args: argparse.Namespace, workers: int | None) -> None:
    """With worker processes ahead, start their fork server before this process imports the batch runner, so
    that both import at once (on two cores, one start-up instead of two in a row)."""
    if args.dry_run or args.executor != "local" or workers is None or workers < 2:
        return
    from occusim.clients._process_executor import start_worker_server

    start_worker_server()


async def run(args: argparse.Namespace) -> int:
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    collect_less()
    try:
        try:
            configs = _configs(args)
            models = [config.model for config in configs]
            workers = _workers(args, models)
        except ValueError as error:
            print(f"occusim run: {error}", file=sys.stderr)
            return 2
        _start_workers_early(args, workers)
        if not args.dry_run:
            from occusim.llm import warm_up

            warm_up(configs)
        from pydantic import ValidationError

        from occusim.analysis import RunConfig, RunError
        from occusim.clients import plan_batch, run_batch
        from occusim.clients.cli.serve import load_scripted_models
        from occusim.environments import ScenarioErrors
    finally:
        freeze_start_up()
    try:
        load_scripted_models(os.environ.get("OCCUSIM_SCRIPTED_MODELS", ""))
        if args.max_cost is not None and not args.max_cost > 0:
            raise ValueError(f"--max-cost {args.max_cost}: use an amount in USD above 0")
        config = RunConfig(
            agent_model=models[0], world_model=models[1], judge_model=models[2],
            tasks=args.tasks, faults=_modes(args.faults), fault_count=args.fault_count,
            fault_duration=args.fault_duration, fault_window=args.fault_window, trials=args.trials, concurrency=args.concurrency,
            sources=args.source, transport=args.transport, mode=args.mode, episode_timeout=args.episode_timeout,
            infra_retries=args.infra_retries, seed=args.seed, cache=not args.no_cache, db=args.db,
            judge_votes=args.judge_votes, exemplars=args.exemplars, agent_temperature=args.agent_temperature,
            protocol=args.protocol, outage_policy=args.outage_policy, workers=workers, executor=args.executor,
            ray_address=args.ray_address, max_cost=args.max_cost,
        )
        if args.dry_run:
            from ._run_plan import print_plan

            print_plan(plan_batch(config, args.out))
            return 0
        if config.max_cost is not None:
            from ._run_plan import warn_unpriced

            warn_unpriced(config)
        summary = await run_batch(config, args.out, show_progress=not args.no_progress)
    except (ValueError, RunError, ValidationError, ImportError, OSError) as error:
        print(f"occusim run: {error}", file=sys.stderr)
        return 2
    except ScenarioErrors as error:
        return report_catalog_problems("run", error.errors)
    from ._run_summary import print_summary

    return print_summary(summary)
