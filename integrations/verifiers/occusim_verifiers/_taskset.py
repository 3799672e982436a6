"""occusim tasks as a verifiers taskset: one task per occusim task x fault mode, one episode per rollout, the
judge's verdict as the reward."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from pydantic import Field
from verifiers.v1.configs.task import TaskConfig
from verifiers.v1.configs.taskset import TasksetConfig
from verifiers.v1.errors import TaskError
from verifiers.v1.harnesses.utils.mcp import mcp_client
from verifiers.v1.mcp import SharedToolsetConfig, Toolset
from verifiers.v1.runtimes import Runtime
from verifiers.v1.task import Task, TaskData
from verifiers.v1.taskset import Taskset
from verifiers.v1.trace import Trace
from verifiers.v1.utils.decorators import metric, reward, stop

from ._episodes import EpisodeApi, api_headers, list_tasks
from ._service import start_service
from ._toolset import OccusimState, OccusimToolset

FaultMode = Literal["E0", "E1", "E2", "E3", "prompt"]


class OccusimTaskConfig(TaskConfig):
    """How each rollout's episode is opened and judged (`--env.taskset.task.*`)."""

    api_key_var: str = "OCCUSIM_API_KEY"
    """Environment variable holding the hosted service's API key (unset: no key, as a --no-auth service)."""
    world_model: str | None = None
    """World model of the episodes; unset, the service's default."""
    fault_count: int = Field(2, ge=0)
    fault_duration: int = Field(2, ge=1)
    request_timeout: float = Field(300.0, gt=0)
    """Seconds one request to the service (an episode call included) may take."""
    judge_timeout: float = Field(600.0, gt=0)
    """Seconds to wait for the verdict of a closed episode before it is reported unjudged."""


class OccusimConfig(TasksetConfig):
    """Which service, tasks and fault modes (`--env.taskset.*`)."""

    url: str | None = None
    """Base URL of a running `occusim serve --http` service (hosted: set the key's variable, see
    task.api_key_var)."""
    occusim: str | None = None
    """Path of an occusim executable: the taskset starts `occusim serve --http` on a loopback port itself."""
    serve_args: list[str] = Field(default_factory=list)
    """Further `occusim serve` arguments for the service the taskset starts (models, --source, --db, ...)."""
    tasks: list[str] = Field(default_factory=list)
    """Task ids, scenario ids or categories to include; empty: every task the service serves."""
    faults: list[FaultMode] = ["E0"]  # pydantic copies the default per instance
    """Fault modes: one verifiers task per occusim task and mode."""
    seed: int = 0
    """Seed of every episode (faults and world-model requests): a group of rollouts shares it."""
    tools: SharedToolsetConfig = SharedToolsetConfig()
    task: OccusimTaskConfig = OccusimTaskConfig()


class OccusimData(TaskData):
    task_id: str
    faults: FaultMode
    seed: int
    service_url: str


class OccusimTask(Task[OccusimData, OccusimState, OccusimTaskConfig]):
    @property
    def key(self) -> str:
        # The service's address is local to the run; the task is what the episodes are of.
        return f"{self.data.task_id}@{self.data.faults}#{self.data.seed}"

    def _api(self) -> EpisodeApi:
        return EpisodeApi(
            self.data.service_url, api_headers(self.config.api_key_var), self.config.request_timeout
        )

    async def setup(self, trace: Trace, runtime: Runtime) -> None:
        body: dict[str, Any] = {
            "task_id": self.data.task_id,
            "faults": self.data.faults,
            "seed": self.data.seed,
            "fault_count": self.config.fault_count,
            "fault_duration": self.config.fault_duration,
        }
        if self.config.world_model is not None:
            body["world_model"] = self.config.world_model
        episode = await self._api().open(body)
        state = trace.state
        state.service_url, state.episode_id = self.data.service_url, episode.episode_id
        state.mcp_url, state.token = episode.mcp_url, episode.token
        state.request_timeout = self.config.request_timeout
        trace.info["occusim"] = {"episode_id": episode.episode_id, "task_id": self.data.task_id}
        # The agent reads the task as any MCP client of the episode does: the server's instructions.
        async with mcp_client(state.mcp_spec()) as client:
            brief = client.instructions
        if brief:
            trace.task.data = trace.task.data.model_copy(update={"prompt": brief})

    @stop
    async def submitted(self, trace: Trace) -> bool:
        """submit_result closed the episode: the rollout is over."""
        state: OccusimState = trace.state
        return state.submitted

    async def finalize(self, trace: Trace, runtime: Runtime) -> None:
        state: OccusimState = trace.state
        if not state.episode_id:
            return
        api = self._api()
        if not state.submitted:
            # The rollout ended without submit_result (turn limit, a plain answer): its last reply is the answer,
            # so the episode is judged like any other.
            current = await api.status(state.episode_id)
            if current["status"] == "open":
                await api.submit(state.episode_id, trace.last_reply)
        status = await api.verdict(state.episode_id, self.config.judge_timeout)
        trace.info["occusim"] = _summary(status)

    def _verdict(self, trace: Trace) -> dict[str, Any]:
        summary = trace.info.get("occusim") or {}
        verdict = summary.get("verdict")
        if verdict is None:
            raise TaskError(
                f"occusim episode {summary.get('episode_id')} has no verdict (status "
                f"{summary.get('status')!r}): is the service run with a judge model "
                "(--judge-model), and is task.judge_timeout long enough? Not rewarded."
            )
        if verdict.get("passed") is None:
            raise TaskError(
                f"occusim episode {summary.get('episode_id')} is unjudged: the judge could not "
                f"decide {verdict.get('unjudged_checks')}. Not rewarded."
            )
        return dict(verdict)

    @reward(weight=1.0)
    async def judge_score(self, trace: Trace) -> float:
        """The verdict's score: the weighted share of passed rubric items."""
        return float(self._verdict(trace)["score"])

    @reward(weight=0.0)
    async def judge_passed(self, trace: Trace) -> float:
        """1 when the episode passed its rubric (score over the task's threshold, no critical item failed)."""
        return 1.0 if self._verdict(trace)["passed"] else 0.0

    @reward(weight=0.0)
    async def invalid_calls(self, trace: Trace) -> float:
        """Minus the calls the episode refused as invalid (arguments against the tool's schema)."""
        self._verdict(trace)
        return -float(trace.info["occusim"]["invalid_calls"])

    @reward(weight=0.0)
    async def simulator_flags(self, trace: Trace) -> float:
        """Minus the steps whose simulated answer the per-step audit flagged."""
        self._verdict(trace)
        return -float(trace.info["occusim"]["flagged_steps"])

    @metric
    async def steps(self, trace: Trace) -> float:
        return float((trace.info.get("occusim") or {}).get("steps", 0))

    @classmethod
    def toolsets(cls, config: OccusimTaskConfig) -> list[Toolset]:
        return []


def _summary(status: dict[str, Any]) -> dict[str, Any]:
    steps = status.get("steps") or []
    return {
        "episode_id": status["episode_id"],
        "task_id": status["task_id"],
        "status": status["status"],
        "verdict": status.get("verdict"),
        "steps": len(steps),
        "invalid_calls": sum(1 for step in steps if _error_type(step) == "invalid_arguments"),
        "flagged_steps": sum(1 for step in steps if step.get("flags")),
        "faulted_steps": sum(1 for step in steps if step.get("fault")),
    }


def _error_type(step: dict[str, Any]) -> str | None:
    observation = step.get("observation")
    if not (step.get("is_error") and isinstance(observation, dict)):
        return None
    error = observation.get("error")
    return error.get("type") if isinstance(error, dict) else None


# One service per executable and arguments, for as long as this process runs (load() may be called again).
_STARTED: dict[tuple[str, ...], str] = {}


class OccusimTaskset(Taskset[OccusimTask, OccusimConfig]):
    @classmethod
    def toolsets(cls, config: OccusimConfig) -> list[Toolset]:
        return [OccusimToolset(config.tools)]

    def service_url(self) -> str:
        # Checked here, not by a validator: verifiers builds the config without options to read its defaults.
        if (self.config.url is None) == (self.config.occusim is None):
            raise ValueError(
                "set exactly one of --env.taskset.url (a running occusim service) and "
                "--env.taskset.occusim (an occusim executable the taskset starts `serve --http` with)"
            )
        if self.config.url is not None:
            if self.config.serve_args:
                raise ValueError(
                    "--env.taskset.serve-args apply to the service the taskset starts: set "
                    "--env.taskset.occusim, not --env.taskset.url"
                )
            return self.config.url.rstrip("/")
        assert self.config.occusim is not None
        key = (self.config.occusim, *self.config.serve_args)
        if key not in _STARTED:
            _STARTED[key] = start_service(self.config.occusim, self.config.serve_args)
        return _STARTED[key]

    def load(self) -> Iterator[OccusimTask]:
        url = self.service_url()
        served = list_tasks(url, api_headers(self.config.task.api_key_var), self.config.task.request_timeout)
        wanted = set(self.config.tasks)
        chosen = [
            task for task in served if not wanted or wanted & {task["id"], task["scenario"], task["category"]}
        ]
        if unmatched := sorted(
            name
            for name in wanted
            if not any(name in {t["id"], t["scenario"], t["category"]} for t in served)
        ):
            raise ValueError(f"no task, scenario or category {unmatched} at {url} (GET /v1/tasks lists them)")
        for task in chosen:
            for faults in self.config.faults:
                yield OccusimTask(
                    OccusimData(
                        id=f"{task['id']}@{faults}",
                        name=f"{task['id']}@{faults}",
                        description=task["title"],
                        # Replaced in setup by the episode's own instructions, which the agent reads.
                        prompt=task["title"],
                        task_id=task["id"],
                        faults=faults,
                        seed=self.config.seed,
                        service_url=url,
                    ),
                    self.config.task,
                )
