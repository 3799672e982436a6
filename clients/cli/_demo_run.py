"""Where `occusim demo` leaves what it ran: a run folder in the user's data folder, which `occusim view` and
`occusim report` open like any run's."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from occusim.analysis import ResultRow
    from occusim.clients import AgentRun
    from occusim.environments import EpisodeRecord, FaultSettings, Scenario, Task
    from occusim.judge import Verdict


def new_demo_folder() -> Path:
    """A fresh folder for one demo: $XDG_DATA_HOME/occusim/demo/<date-time> (~/.local/share unless set)."""
    from occusim.service import data_dir

    base = data_dir() / "demo"
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    folder, number = base / stamp, 1
    while folder.exists():
        number += 1
        folder = base / f"{stamp}-{number}"
    folder.mkdir(parents=True)
    return folder


def demo_row(task: Task, scenario: Scenario, faults: FaultSettings, *, agent_model: str, world_model: str,
             judge_model: str, record: EpisodeRecord, run: AgentRun, verdict: Verdict) -> ResultRow:
    """The demo's episode as a run's result row."""
    from occusim.analysis import ResultRow
    from occusim.environments import Usage
    from occusim.llm import sum_usage
    from occusim.server import fault_tally

    tally = fault_tally(faults, task, record.steps)
    usage = {"agent": run.usage or Usage(), "world_model": sum_usage(step.usage for step in record.steps),
             "judge": verdict.usage}
    return ResultRow(
        task_id=task.id, scenario_id=scenario.id, category=scenario.category, difficulty=task.difficulty,
        fault_mode=faults.mode, fault_count=faults.count, fault_duration=faults.duration, trial=0, seed=faults.seed,
        agent_model=agent_model, world_model=world_model, judge_model=judge_model, transport="inprocess",
        status="unjudged" if verdict.unjudged else "ok", episode_id=record.id,
        score=None if verdict.unjudged else verdict.score, passed=None if verdict.unjudged else verdict.passed,
        verdict=verdict, usage=usage, steps=len(record.steps),
        faults_injected=[step.fault.label for step in record.steps if step.fault is not None],
        faults_planned=tally.planned, faults_met=tally.met, too_short_for_faults=tally.too_short,
        agent_ended=run.ended, final_answer=run.final_answer, messages=run.messages, tools=run.tools,
    )


def write_demo_run(folder: Path, row: ResultRow, *, votes: int) -> None:
    """run.json and results.jsonl of a one-episode run (its store, episodes.db, is already there)."""
    from occusim.analysis import RunConfig, RunDir

    run_dir = RunDir(folder)
    run_dir.write_config(RunConfig(agent_model=row.agent_model, world_model=row.world_model,
                                   judge_model=row.judge_model, tasks=row.task_id, faults=[row.fault_mode],
                                   fault_count=row.fault_count, fault_duration=row.fault_duration, seed=row.seed,
                                   judge_votes=votes))
    run_dir.append_row(row)
