"""EpisodeService: creates episodes of catalog tasks, reopens them from the store, and expires idle ones."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

from occusim.environments import (
    MAX_JSON_DEPTH,
    Catalog,
    EpisodeRecord,
    FaultSettings,
    SimulationMode,
    UnknownTaskError,
)
from occusim.llm import ModelConfig

from ._episode import CostHook, Episode, SpendHold
from ._errors import EpisodeError
from ._limits import LoopSemaphore
from ._protocol import NATIVE, JudgeHook, SimulationProtocol
from ._store import Store, utcnow
from ._world_model import DEFAULT_CALL_DEADLINE, WorldModel

DEFAULT_MAX_CONCURRENT_CALLS = 128
EPISODE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


class EpisodeService:
    """The episodes of one catalog, kept in memory while open and durable in `store`.

    `protocol` simulates, presents and judges the episodes (occusim's own unless the program chose
    another). `world_model` is the default simulator (a ModelConfig or model string; None resolves
    ModelConfig.for_role("world_model") on first use). `judge`, when set, scores each submitted episode.
    `max_argument_depth` bounds the nesting of every tool call's arguments, declared or not.
    `call_deadline` bounds each tool call's world-model work, retries and repairs included, in seconds;
    at most `max_concurrent_calls` tool calls wait on world models at once, later ones queue before
    spending a model call. `on_cost` is told each step's and each judgment's model cost, with the episode's tenant;
    `spend_hold` is held around each world-model call until its cost is told (it refuses calls past a cap).
    Any process sharing the store can open any episode: `open` reloads from the store what is not cached.
    """

    def __init__(self, catalog: Catalog, store: Store, *, world_model: ModelConfig | str | None = None,
                 judge: JudgeHook | None = None, history_window: int = 6, max_repairs: int = 2,
                 protocol: SimulationProtocol = NATIVE, max_argument_depth: int = MAX_JSON_DEPTH,
                 call_deadline: float = DEFAULT_CALL_DEADLINE,
                 max_concurrent_calls: int = DEFAULT_MAX_CONCURRENT_CALLS,
                 on_cost: CostHook | None = None, spend_hold: SpendHold | None = None) -> None:
        self.catalog = catalog
        self.on_cost = on_cost
        self.protocol = protocol
        self.spend_hold = spend_hold
        self.store = store
        self.judge = judge
        self.history_window = history_window
        self.max_repairs = max_repairs
        self.max_argument_depth = max_argument_depth
        self.call_deadline = call_deadline
        self._admission = LoopSemaphore(max_concurrent_calls)
        self._default_model = world_model
        self._world_models: dict[ModelConfig, WorldModel] = {}
        self._episodes: dict[str, Episode] = {}

    @property
    def default_mode(self) -> SimulationMode:
        """The mode of an episode that names none, as the service's protocol simulates it."""
        return self.protocol.episode_mode(None)

    @property
    def open_episodes(self) -> dict[str, Episode]:
        """Episodes held in memory (open ones; closed ones are dropped once they close)."""
        return self._episodes

    def default_world_model(self) -> ModelConfig:
        if not isinstance(self._default_model, ModelConfig):
            self._default_model = _config(self._default_model)
        return self._default_model

    def world_model(self, model: ModelConfig | str | None = None) -> WorldModel:
        """The shared WorldModel for `model` (default: the service's)."""
        config = self.default_world_model() if model is None else _config(model)
        simulator = self._world_models.get(config)
        if simulator is None:
            simulator = WorldModel(config, history_window=self.history_window, max_repairs=self.max_repairs,
                                   deadline=self.call_deadline, admission=self._admission)
            self._world_models[config] = simulator
        return simulator

    async def create(self, task_id: str, *, world_model: ModelConfig | str | None = None,
                     faults: FaultSettings | None = None, mode: SimulationMode = "tracked",
                     tenant: str | None = None, episode_id: str | None = None) -> Episode:
        """Start an episode of `task_id`.

        Raises UnknownTaskError for a task the catalog lacks, EpisodeError for a malformed `episode_id`,
        EpisodeExistsError for one already taken.
        """
        task = self.catalog.task(task_id)
        scenario = self.catalog.scenario_of(task)
        self.protocol.check_episode(task_id, scenario, mode)
        if episode_id is None:
            episode_id = uuid.uuid4().hex
        elif not EPISODE_ID.fullmatch(episode_id):
            raise EpisodeError(
                f"episode id {episode_id!r} is not valid: use 1-64 letters, digits, '_', '-' or '.', "
                "starting with a letter or digit"
            )
        simulator = self.world_model(world_model)
        state = self.catalog.initial_state(task)
        record = EpisodeRecord(
            id=episode_id,
            task_id=task.id,
            scenario_id=scenario.id,
            world_model=simulator.name,
            mode=mode,
            faults=faults or FaultSettings(),
            initial_state=state,
            state=state,
            tenant=tenant,
            created_at=utcnow(),
        )
        await self.store.create_episode(record)
        episode = self._episode(record, simulator)
        self._episodes[episode.id] = episode
        return episode

    async def open(self, episode_id: str) -> Episode:
        """The episode with this id: from memory, else reloaded from the store at its last committed step.

        Closed episodes open too (their `step` raises EpisodeClosedError). Raises EpisodeNotFoundError.
        """
        cached = self._episodes.get(episode_id)
        if cached is not None:
            return cached
        record = await self.store.load_episode(episode_id)
        episode = self._episode(record, self._world_model_named(record.world_model))
        if episode.closed:
            return episode
        return self._episodes.setdefault(episode_id, episode)

    async def expire_idle(self, max_idle_seconds: float) -> list[str]:
        """Mark open episodes without a step for `max_idle_seconds` as expired; returns their ids."""
        expired = await self.store.expire_idle(utcnow() - timedelta(seconds=max_idle_seconds))
        for episode_id in expired:
            episode = self._episodes.pop(episode_id, None)
            if episode is not None:
                episode.mark_expired()
        return expired

    def forget(self, episode_id: str) -> None:
        """Drop an episode from memory (it stays in the store and can be opened again)."""
        self._episodes.pop(episode_id, None)

    def _episode(self, record: EpisodeRecord, simulator: WorldModel) -> Episode:
        try:
            task = self.catalog.task(record.task_id)
        except UnknownTaskError:
            raise EpisodeError(
                f"episode {record.id} belongs to task {record.task_id!r}, which is not in the loaded catalog; "
                "load the source that defines it"
            ) from None
        return Episode(
            record, task=task, scenario=self.catalog.scenario_of(task), world_model=simulator, store=self.store,
            judge=self.judge, on_close=lambda episode: self.forget(episode.id), protocol=self.protocol,
            max_argument_depth=self.max_argument_depth, on_cost=self.on_cost, spend_hold=self.spend_hold,
        )

    def _world_model_named(self, name: str) -> WorldModel:
        # The stored name has no endpoint or key: reuse the configuration this process already knows for it.
        for config, simulator in self._world_models.items():
            if config.model == name:
                return simulator
        default = self.default_world_model()
        return self.world_model(default if not name or default.model == name else name)


def _config(model: ModelConfig | str | None) -> ModelConfig:
    if isinstance(model, ModelConfig):
        return model
    return ModelConfig.for_role("world_model", model=model)
