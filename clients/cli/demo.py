"""`occusim demo`: one bundled task end to end over MCP, printing each call, fault and state change live."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from ._catalog_options import add_catalog_options, load_catalog_from, report_catalog_problems

DEFAULT_TASK = "emergency-dispatcher/chest-pain-delta"
LOCAL = "local"
# Small-model settings: the bundled scenarios' prompts need a large context, and short answers without
# repair rounds keep the offline run to minutes on two CPU cores (repairs rarely rescue a 270M model).
LOCAL_CONTEXT = "32768"
LOCAL_REPAIRS = 0
LOCAL_RETRIES = 1
EXCERPT = 700

DESCRIPTION = f"""\
Run one task of the bundled catalog end to end, offline by default: the task is served over MCP
(in-process client), the bundled local model (Gemma 3 270M via llama.cpp) simulates the tools with
implicit (E2) faults, and the reference-solution replayer acts as the agent (a 270M model cannot act as
an agent). With the local world model each call gets one answer (no repair rounds), bounded to fit the
tool's output schema, and the replayer repeats a failed call once. The world-model prompt puts what
changes last, so llama.cpp reads only the end of it again on each call.

Each call is printed as it happens: the arguments, what the world model answered, each injected fault
(true vs shown) and the state changes (JSON Patch operations). Then the episode is judged: state and
tool_call rubric items deterministically, llm items by the judge model (the local model unless set; its
votes are a smoke test, not a trustworthy verdict).

The episode is kept: the demo leaves a run folder (its store, run.json and results.jsonl) under
$XDG_DATA_HOME/occusim/demo (by default ~/.local/share/occusim/demo) and ends with the `occusim view` and
`occusim report` commands that open it. Under the bundled model the reference solution may well not pass:
the 270M world model often leaves out the state change a call should make, and the 270M judge misreads
checks; the demo then says so.

Switch any role to a real model with a flag or an environment variable:
  agent        --agent-model A  or OCCUSIM_AGENT_MODEL        (default: the reference replayer)
  world model  --world-model W  or OCCUSIM_WORLD_MODEL_MODEL  (default: local)
  judge        --judge-model J  or OCCUSIM_JUDGE_MODEL        (default: local)
OCCUSIM_MODEL sets all three. The default task is {DEFAULT_TASK}.
"""

EPILOG = """\
examples:
  occusim demo
  occusim demo emergency-dispatcher/chest-pain-delta --faults E1
  OCCUSIM_MODEL=openai/gpt-4.1 occusim demo --agent-model openai/gpt-4.1-mini
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task_id", metavar="TASK_ID", nargs="?", default=DEFAULT_TASK,
                        help=f"a task id (default {DEFAULT_TASK})")
    parser.add_argument("--agent-model", metavar="A", help="an LLM agent instead of the reference replayer")
    parser.add_argument("--world-model", metavar="W", help="the model simulating the tools")
    parser.add_argument("--judge-model", metavar="J", help="the model judging llm rubric items")
    parser.add_argument("--faults", choices=["E0", "E1", "E2", "E3", "prompt"], default="E2",
                        help="fault mode (default E2)")
    parser.add_argument("--fault-count", type=int, default=2, metavar="N", help="how many faults (default 2)")
    parser.add_argument("--fault-duration", type=int, default=2, metavar="N",
                        help="consecutive calls each fault lasts (default 2)")
    parser.add_argument("--seed", type=int, default=0, metavar="S",
                        help="seed of the faults, the agent and the judge (default 0)")
    parser.add_argument("--votes", type=int, default=1, metavar="K", help="judge votes per check (default 1)")
    parser.add_argument("--max-tokens", type=int, metavar="N",
                        help="cap on each world-model answer (default: with the local model, the longest answer "
                             "the tool's bounded output schema admits; otherwise the provider's)")
    parser.add_argument("--repairs", type=int, metavar="N",
                        help=f"world-model repair rounds per call (default {LOCAL_REPAIRS} with the local model, else 2)")
    add_catalog_options(parser)
    parser.add_argument("--db", metavar="URL",
                        help="episode store (default: episodes.db in the demo's folder, kept under "
                             "$XDG_DATA_HOME/occusim/demo, by default ~/.local/share/occusim/demo)")


def _model(role: str, explicit: str | None) -> str:
    """The role's model: flag, then OCCUSIM_<ROLE>_MODEL, then OCCUSIM_MODEL, else the local model."""
    return explicit or os.environ.get(f"OCCUSIM_{role.upper()}_MODEL") or os.environ.get("OCCUSIM_MODEL") or LOCAL


def _excerpt(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= EXCERPT:
        return text
    return f"{text[:EXCERPT]} ... ({len(text) - EXCERPT} more characters)"


def _patch_line(operation: dict[str, Any]) -> str:
    op, path = operation.get("op", "?"), operation.get("path", "")
    if op in ("add", "replace", "test"):
        return f"{op} {path} = {_excerpt(operation.get('value'))}"
    if op in ("move", "copy"):
        return f"{op} {operation.get('from')} -> {path}"
    return f"{op} {path}"


async def run(args: argparse.Namespace) -> int:
    os.environ.setdefault("OCCUSIM_LOCAL_CONTEXT", LOCAL_CONTEXT)
    loading = await _load_local_model(args)
    try:
        return await _run(args)
    finally:
        if loading is not None:
            await asyncio.gather(loading, return_exceptions=True)  # a failed start is reported by the first call


async def _load_local_model(args: argparse.Namespace) -> asyncio.Task[Any] | None:
    """Start loading the local model (about 1.5 s) in a thread, while the catalog loads and the store opens."""
    if LOCAL not in (_model("world_model", args.world_model), _model("judge", args.judge_model)):
        return None
    from occusim.llm import start_local_model

    loading = asyncio.ensure_future(start_local_model())
    await asyncio.sleep(0)  # let the task hand the load to its thread before this one goes on
    return loading


async def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from occusim.environments import FaultSettings, ScenarioErrors, UnknownTaskError

    console = Console(highlight=False)
    err = Console(stderr=True, highlight=False)
    try:
        catalog = load_catalog_from(args)
        task = catalog.task(args.task_id)
    except UnknownTaskError as error:
        err.print(f"occusim demo: {error}")
        return 2
    except ScenarioErrors as error:
        return report_catalog_problems("demo", error.errors)
    scenario = catalog.scenario_of(task)
    agent_model = args.agent_model or os.environ.get("OCCUSIM_AGENT_MODEL") or os.environ.get("OCCUSIM_MODEL")
    if agent_model is None and not task.reference_solution:
        err.print(f"occusim demo: task {task.id} has no reference solution to replay; pass --agent-model")
        return 2
    world_model = _model("world_model", args.world_model)
    judge_model = _model("judge", args.judge_model)
    faults = FaultSettings(mode=args.faults, count=args.fault_count, duration=args.fault_duration, seed=args.seed)

    console.rule(f"[bold]{scenario.name}: {task.title}")
    console.print(f"[bold]task[/] {task.id} (difficulty {task.difficulty}, {scenario.category})")
    console.print(f"[bold]agent[/] {agent_model or 'reference-replay (replays the reference solution; no model)'}")
    console.print(f"[bold]world model[/] {world_model}" + (" (bundled Gemma 3 270M, offline)"
                                                          if world_model == LOCAL else ""))
    console.print(f"[bold]judge[/] {judge_model}" + (" (bundled Gemma 3 270M: a smoke test, not a trustworthy "
                                                     "judge)" if judge_model == LOCAL else ""))
    console.print(f"[bold]faults[/] {faults.mode} (count {faults.count}, duration {faults.duration}, "
                  f"seed {faults.seed})")
    if LOCAL in (world_model, judge_model):
        console.print("[dim]the bundled model (Gemma 3 270M, llama.cpp) is loading in the background[/]")
    from occusim.analysis import RunDir

    from ._demo_run import new_demo_folder

    folder = new_demo_folder()
    db = args.db or RunDir(folder).default_db
    status = await _demo(args, console, catalog, task, scenario, agent_model, world_model, judge_model, faults, db,
                         folder)
    if status == 0:
        _print_next_steps(console, folder)
    return status


async def _demo(args: argparse.Namespace, console: Any, catalog: Any, task: Any, scenario: Any,
                agent_model: str | None, world_model: str, judge_model: str, faults: Any, db: str,
                folder: Path) -> int:
    from occusim.clients import REPLAY_AGENT, LLMAgent, ReplayAgent, ToolEvent, connect
    from occusim.environments import SUBMIT_TOOL
    from occusim.judge import JudgeError, judge
    from occusim.llm import LLMError, ModelConfig
    from occusim.server import EpisodeService, Store, build_mcp_server

    async with Store(db) as store:
        local = world_model == LOCAL
        repairs = args.repairs if args.repairs is not None else (LOCAL_REPAIRS if local else 2)
        service = EpisodeService(catalog, store, world_model=ModelConfig.for_role("world_model", world_model),
                                 max_repairs=repairs)
        service.world_model().max_tokens = args.max_tokens
        episode = await service.create(task.id, faults=faults)
        console.print(f"[bold]episode[/] {episode.id} (store {store.url})")
        console.print(f"[bold]instruction[/] {task.instruction.strip()}")
        shown = 0

        def on_tool_result(event: ToolEvent) -> None:
            nonlocal shown
            if event.name == SUBMIT_TOOL:
                return  # the final answer is printed once the agent returns
            steps = episode.record.steps[shown:]
            shown = len(episode.record.steps)
            console.rule(f"call {shown}: {event.name}", align="left")
            console.print(f"[bold]arguments[/] {_excerpt(event.arguments)}")
            if not steps:
                console.print(f"[red]refused by the server[/] {_excerpt(event.text)}")
                return
            for step in steps:
                _print_step(console, step)

        agent = (LLMAgent(ModelConfig.for_role("agent", agent_model), max_turns=task.max_steps + 5)
                 if agent_model else ReplayAgent(task, retries=LOCAL_RETRIES if local else 3))
        if local:
            console.print("[dim]the first call waits while the bundled model loads and reads the scenario's prompt "
                          "(tens of seconds on two cores); later calls reuse what it read[/]")
        try:
            async with connect(build_mcp_server(episode)) as client:
                run = await agent.run(client, occupation=scenario.occupation, seed=args.seed,
                                      on_tool_result=on_tool_result)
        except LLMError as error:
            console.print(f"[red]the agent model failed:[/] {error}")
            return 1
        console.rule(SUBMIT_TOOL, align="left")
        console.print(f"[bold]final answer[/] ({run.ended}) {_excerpt(run.final_answer)}")
        console.print(f"[bold]state changes[/] {sum(len(s.state_patch) for s in episode.record.steps)} operation(s) "
                      f"over {len(episode.record.steps)} call(s)")
        checks = sum(len(item.checks) for item in task.rubric.items if item.kind == "llm")
        console.print(f"[dim]judging: the state and tool-call items at once, then {checks} llm check(s) x "
                      f"{args.votes} vote(s) read by {judge_model}"
                      + (" (the local model reads the whole episode: about a minute)" if judge_model == LOCAL else "")
                      + "[/]")
        try:
            verdict = await judge(task, episode.record, scenario=scenario,
                                  model=ModelConfig.for_role("judge", judge_model), votes=args.votes, seed=args.seed)
        except (JudgeError, LLMError) as error:
            console.print(f"[red]judging failed:[/] {error}")
            return 1
        await store.save_judgment(episode.id, verdict)
        _print_world_model_summary(console, episode.record.steps)
        _print_verdict(console, verdict, judge_model)
        if not verdict.passed and agent_model is None and LOCAL in (world_model, judge_model):
            _explain_reference_failure(console, world_model, judge_model)
    from ._demo_run import demo_row, write_demo_run

    row = demo_row(task, scenario, faults, agent_model=agent_model or REPLAY_AGENT, world_model=world_model,
                   judge_model=judge_model, record=episode.record, run=run, verdict=verdict)
    write_demo_run(folder, row, votes=args.votes)
    return 0


def _explain_reference_failure(console: Any, world_model: str, judge_model: str) -> None:
    """Why the reference solution, which passes by construction, can fail under the bundled model."""
    reasons = []
    if world_model == LOCAL:
        reasons.append("the 270M world model often answers a call without the state change it should make (an "
                       "empty patch), so the state items find the state unchanged")
    if judge_model == LOCAL:
        reasons.append("the 270M judge often misreads the llm checks")
    console.print("[yellow]why the reference solution did not pass:[/] " + "; ".join(reasons) + ". The reference "
                  "passes with a capable world model and judge (--world-model, --judge-model or OCCUSIM_MODEL).")


def _print_next_steps(console: Any, folder: Path) -> None:
    """What to open next: the demo's folder is a run folder that the viewer and the report read."""
    console.rule("next", align="left")
    # Not wrapped, so that each command can be copied as one line.
    console.print(f"[bold]kept in[/] {folder}", soft_wrap=True)
    console.print(f"  occusim view {folder}", soft_wrap=True)
    console.print(f"  occusim report {folder} --format html --out {folder / 'report.html'}", soft_wrap=True)
    console.print("[dim](occusim is .venv/bin/occusim in a checkout: run `source .venv/bin/activate` first, or "
                  "type the path)[/]")


def _print_step(console: Any, step: Any) -> None:
    world = f"{step.latency_ms / 1000:.1f} s, {step.usage.prompt_tokens}+{step.usage.completion_tokens} tokens"
    if step.fault is not None and step.fault.kind == "explicit":
        console.print(f"[yellow]fault (explicit {step.fault.label})[/] the world model was not called; shown: "
                      f"{_excerpt(step.observation)}")
        return
    if step.error:
        console.print(f"[red]error[/] ({world}) {_excerpt(step.error)}")
        return
    if step.fault is not None:
        console.print(f"[bold]world model[/] ({world}) true answer: {_excerpt(step.true_observation)}")
        console.print(f"[yellow]fault (implicit {step.fault.label})[/] {step.fault.detail}")
        console.print(f"[yellow]shown to the agent[/] {_excerpt(step.observation)}")
    else:
        console.print(f"[bold]world model[/] ({world}) {_excerpt(step.observation)}")
    for operation in step.state_patch:
        console.print(f"  [green]state[/] {_patch_line(operation)}")


def _print_world_model_summary(console: Any, steps: Any) -> None:
    """How many world-model answers were valid, and how much of the prompts came from the provider's cache."""
    from occusim.llm import sum_usage

    asked = [s for s in steps if s.fault is None or s.fault.kind != "explicit"]
    valid = [s for s in asked if s.error is None]
    usage = sum_usage(s.usage for s in asked)
    share = f" ({len(valid) / len(asked):.0%})" if asked else ""
    console.print(f"[bold]world model[/] {len(valid)} of {len(asked)} answers valid{share}; "
                  f"{usage.prompt_tokens} prompt tokens, {usage.prompt_tokens_reused} of them reused from the "
                  f"provider's prompt cache; {usage.completion_tokens} tokens generated; "
                  f"{sum(s.latency_ms for s in asked) / 1000:.1f} s in the world model")


def _print_verdict(console: Any, verdict: Any, judge_model: str) -> None:
    from rich.table import Table

    table = Table(title=f"verdict: score {verdict.score:.2f}, "
                        f"{'passed' if verdict.passed else 'not passed'} (threshold {verdict.pass_threshold})")
    for column in ("item", "kind", "weight", "passed", "judged by", "reason"):
        table.add_column(column)
    for item in verdict.items:
        by = "deterministic" if item.deterministic else f"{judge_model} ({verdict.votes} vote(s))"
        reasons = "; ".join(check.reason for check in item.checks if check.reason)
        passed = {True: "[green]yes[/]", False: "[red]no[/]", None: "-"}[item.passed]
        table.add_row(item.id, item.kind, f"{item.weight:g}", passed, by, _excerpt(reasons)[:200])
    console.print(table)
    if verdict.abstentions or verdict.ties:
        console.print(f"judge: {verdict.abstentions} abstention(s), ties on {', '.join(verdict.ties) or 'none'}")
    if judge_model == LOCAL:
        console.print("[dim]llm items were judged by the bundled 270M model: a smoke test of the pipeline, "
                      "not a trustworthy verdict.[/]")
    sys.stdout.flush()
