"""A run's files: the configuration (run.json) and one result row per finished episode (results.jsonl)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from occusim.environments import FaultMode, OccusimError, ProtocolName, StepFlag, Usage
from occusim.judge import Verdict

from ._provenance import Provenance, provenance_changes

RUN_FILE = "run.json"
RESULTS_FILE = "results.jsonl"
EPISODES_DB = "episodes.db"

Transport = Literal["inprocess", "stdio", "http"]
Executor = Literal["local", "ray"]
# unjudged: the episode ran, but the judge could not decide one of its checks (no usable vote); like
# infra_error it is never scored against the agent, and it is reported apart.
RowStatus = Literal["ok", "infra_error", "unjudged"]
# The settings that decide what an episode is; a resumed run must keep them.
IDENTITY_FIELDS = ("agent_model", "world_model", "judge_model", "fault_count", "fault_duration", "fault_window", "seed", "mode",
                   "judge_votes", "agent_temperature", "sources", "protocol", "outage_policy")


class RunError(OccusimError):
    """A run directory or configuration that cannot be used; the message says which file and what to do."""


class RunConfig(BaseModel):
    """Everything `occusim run` was asked to do; written to DIR/run.json."""

    model_config = ConfigDict(extra="forbid")

    agent_model: str = Field(description="litellm model string of the agent, or 'reference-replay'.")
    world_model: str
    judge_model: str
    tasks: str = Field(default="all", description="Task selector: comma-separated globs, scenario ids or categories.")
    faults: list[FaultMode] = Field(default_factory=lambda: list[FaultMode](["E0"]))
    fault_count: int = Field(default=2, ge=0, le=100)
    fault_duration: int = Field(default=2, ge=1, le=100)
    fault_window: int | None = Field(
        default=None, ge=1, le=500, description="Calls over which faults are spread; default the task's expected length.")
    trials: int = Field(default=1, ge=1)
    concurrency: int = Field(default=4, ge=1, description="Episodes at once, over every worker.")
    workers: int | None = Field(
        default=None, ge=1,
        description="Worker processes (or Ray actors) sharing the concurrency; default 1 (Ray: one per cluster CPU).",
    )
    executor: Executor = Field(default="local", description="local (this machine) or ray (a Ray cluster).")
    ray_address: str | None = Field(default=None, description="The Ray cluster to join; default a local one.")
    max_cost: float | None = Field(
        default=None, gt=0, description="USD this invocation may spend before it stops handing out episodes."
    )
    sources: list[str] = Field(default_factory=list)
    transport: Transport = "inprocess"
    mode: Literal["tracked", "history"] = "tracked"
    episode_timeout: float = Field(default=900.0, gt=0, description="Seconds one episode may take, judging included.")
    infra_retries: int = Field(default=2, ge=0, description="Extra attempts after an infrastructure error.")
    seed: int = 0
    cache: bool = True
    db: str | None = Field(default=None, description="Episode store URL; default DIR/episodes.db.")
    judge_votes: int = Field(default=3, ge=1)
    exemplars: str | None = Field(
        default=None, description="A folder of judge exemplar files merged into the tasks' rubrics before judging."
    )
    agent_temperature: float = Field(default=1.0, description="The agent samples, so that trials are independent.")
    agent_max_turns: int | None = Field(default=None, description="Model turns per episode; default max_steps + 5.")
    protocol: ProtocolName = Field(
        default="native",
        description="native (occusim's agent, world model and judge) or occubench (OccuBench's harness, replicated).",
    )
    outage_policy: Literal["infra", "harness"] = Field(
        default="infra",
        description="infra: a provider that stays down makes the episode an infra_error (retried, never scored); "
                    "harness (--protocol occubench only): an agent or verifier outage is scored as OccuBench does.",
    )
    provenance: Provenance | None = Field(default=None, description="Protocol, code and prompt versions of the run.")

    def trial_seed(self, trial: int) -> int:
        """The seed of trial `trial`: it drives the fault schedule, the agent's sampling and the judge's order."""
        return self.seed + trial


class Combination(BaseModel):
    """One unit of work: a task under one fault mode, one trial."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    fault_mode: FaultMode
    trial: int

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.task_id, self.fault_mode, self.trial)


# state: every audit check ran (tracked mode); no_state: those that need a tracked state were skipped
# (history mode); None: not audited (OccuBench's protocol, or rows written before the audit existed).
AuditCoverage = Literal["state", "no_state"]


class StepFlags(BaseModel):
    """The audit's flags on one step of an episode."""

    step: int
    tool: str
    flags: list[StepFlag]


class ResultRow(BaseModel):
    """One finished episode of a run, as appended to results.jsonl."""

    task_id: str
    scenario_id: str
    category: str
    difficulty: int
    fault_mode: FaultMode
    fault_count: int
    fault_duration: int
    trial: int
    seed: int
    agent_model: str
    world_model: str
    judge_model: str
    transport: Transport
    status: RowStatus
    error: str | None = Field(default=None, description="Why the episode is an infra_error.")
    configuration_error: str | None = Field(
        default=None, description="The setting to check when the infra_error is the configuration's (an endpoint "
        "refused or unknown, a key missing or refused, an unknown model): the run stops at the first.")
    attempts: int = 1
    episode_id: str | None = None
    score: float | None = None
    passed: bool | None = None
    verdict: Verdict | None = None
    judge_checks: int = Field(default=0, description="llm checks the judge voted on (the tie-rate denominator).")
    judge_check_votes: int = Field(default=0, description="llm checks x votes (the abstention-rate denominator).")
    judge_abstentions: int = Field(default=0, description="Votes on a check with no usable answer (fail votes).")
    judge_ties: int = Field(default=0, description="llm checks whose votes tied (not passed).")
    judge_reasks: int = Field(default=0, description="Extra judge requests made because an answer was unusable.")
    unjudged_checks: list[str] = Field(default_factory=list, description="Checks the judge could not decide.")
    usage: dict[str, Usage] = Field(default_factory=dict, description="By role: agent, world_model, judge.")
    steps: int = 0
    simulator_errors: int = Field(default=0, description="Steps whose world model gave no usable answer.")
    faults_injected: list[str] = Field(default_factory=list, description="Labels of the faults the agent met.")
    # None on rows written before faults were counted.
    faults_planned: int | None = Field(default=None, description="Faults the server planned for the episode (E1-E3).")
    faults_met: int | None = Field(default=None, description="Planned faults the episode met (one call of each or more).")
    too_short_for_faults: bool = Field(
        default=False, description="The episode ended before it could meet every planned fault (too few calls)."
    )
    faults_not_applicable: bool = Field(
        default=False,
        description="A planned fault was due, but no call offered it had an answer it could degrade (implicit faults).",
    )
    outage: str | None = Field(
        default=None,
        description="Under --outage-policy harness: the agent's or verifier's provider failed, and the episode was "
                    "scored as OccuBench's harness scores it (the agent stopped there; a failed vote is False).",
    )
    fault_window: int | None = Field(
        default=None, description="Calls over which the planned faults were spread (an episode this long meets them all)."
    )
    audited: AuditCoverage | None = Field(default=None, description="Which of the per-step audit's checks ran.")
    flagged_steps: list[StepFlags] = Field(default_factory=list, description="The steps the audit flagged.")
    agent_ended: str | None = Field(default=None, description="submitted, max_steps or no_tool_call.")
    final_answer: str | None = None
    messages: list[dict[str, Any]] = Field(default_factory=list, description="What the agent saw, OpenAI format.")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="The tools offered, OpenAI format.")
    duration_s: float = 0.0
    finished_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.task_id, self.fault_mode, self.trial)

    @property
    def scored(self) -> bool:
        return self.status == "ok"


class RunDir:
    """A run's output folder: DIR/run.json, DIR/results.jsonl and (by default) DIR/episodes.db."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @property
    def config_path(self) -> Path:
        return self.path / RUN_FILE

    @property
    def results_path(self) -> Path:
        return self.path / RESULTS_FILE

    @property
    def default_db(self) -> str:
        return f"sqlite+aiosqlite:///{(self.path / EPISODES_DB).resolve()}"

    def read_config(self) -> RunConfig:
        if not self.config_path.is_file():
            raise RunError(f"{self.config_path} not found: is {self.path} the --out folder of `occusim run`?")
        try:
            return RunConfig.model_validate_json(self.config_path.read_text(encoding="utf-8"))
        except ValidationError as error:
            raise RunError(f"{self.config_path}: not a run configuration: {error}") from None

    def write_config(self, config: RunConfig) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(config.model_dump_json(indent=2) + "\n", encoding="utf-8")

    def check_resumable(self, config: RunConfig) -> None:
        """Refuse to mix episodes of different settings in one folder."""
        if not self.config_path.is_file():
            return
        previous = self.read_config()
        changed = [name for name in IDENTITY_FIELDS if getattr(previous, name) != getattr(config, name)]
        differences = [f"{name}: {getattr(previous, name)!r} -> {getattr(config, name)!r}" for name in changed]
        differences += provenance_changes(previous.provenance, config.provenance)
        if differences:
            details = ", ".join(differences)
            raise RunError(
                f"{self.config_path} was written for other settings ({details}); resume with the same settings "
                "or choose another --out folder"
            )

    def read_rows(self) -> list[ResultRow]:
        """Every row of results.jsonl in file order; torn lines (from a killed run) are skipped."""
        if not self.results_path.is_file():
            return []
        rows = []
        text = self.results_path.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short when the process was killed; its episode runs again
            try:
                rows.append(ResultRow.model_validate(data))
            except ValidationError as error:
                raise RunError(f"{self.results_path}:{number}: not a result row: {error}") from None
        return rows

    def latest_rows(self) -> list[ResultRow]:
        """One row per combination: the last one written (a retried infra_error is superseded)."""
        latest: dict[tuple[str, str, int], ResultRow] = {}
        for row in self.read_rows():
            latest[row.key] = row
        return list(latest.values())

    def append_row(self, row: ResultRow) -> None:
        """Append one row as one line; called off the event loop."""
        self.path.mkdir(parents=True, exist_ok=True)
        line = row.model_dump_json() + "\n"
        with self.results_path.open("a+b") as handle:
            # A killed run can leave a torn last line; start on a fresh line so this row stays whole.
            if handle.tell() > 0:
                handle.seek(-1, 2)
                if handle.read(1) != b"\n":
                    line = "\n" + line
            handle.write(line.encode("utf-8"))
            handle.flush()


def load_rows(run_dir: str | Path) -> tuple[RunConfig, list[ResultRow]]:
    """A finished (or partial) run: its configuration and one row per combination."""
    folder = RunDir(run_dir)
    return folder.read_config(), folder.latest_rows()
