"""`OccusimEnv`: one occusim task as a Gymnasium environment with text actions and observations."""

from __future__ import annotations

import json
import string
from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium import spaces

from occusim.environments import FaultMode

from ._rollouts import Rollout, RolloutPool, ascii_json

# Printable ASCII: every observation is ASCII-escaped JSON, and an action is JSON, which needs no more.
CHARSET = string.printable
MAX_TEXT = 1 << 20


class OccusimEnv(gym.Env[str, str]):
    """An occusim task as a `gymnasium.Env`.

    An action is a JSON tool call, `{"tool": NAME, "arguments": {...}}`; the observation is the tool's
    result as ASCII-safe JSON text (after `reset`, the task brief and the tools, as JSON). Calling
    `submit_result` ends the episode (`terminated`) and the reward is the judge's verdict score (0 for
    every other step). An action that is not such a call is not sent: the observation is a JSON error,
    `info["invalid_action"]` is True, and the episode goes on. An episode the judge could not score ends with
    reward 0 and `info["judged"]` False (see `info["judge_error"]`): leave it out of training.

    `sources` add catalog sources to the bundled catalog; `db` keeps the episodes in that store (default: a
    temporary one); `pool` shares one `RolloutPool` (one catalog, one engine) between environments.
    `reset(seed=S)` opens a new episode whose fault schedule follows S; `options` may name another
    `task_id` or `faults` mode for that episode. The catalog is loaded once, when the environment is made.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        task_id: str | None = None,
        *,
        faults: FaultMode = "E0",
        world_model: str | None = None,
        judge_model: str | None = None,
        sources: list[str] | None = None,
        votes: int = 3,
        db: str | None = None,
        pool: RolloutPool | None = None,
    ) -> None:
        self._owns_pool = pool is None
        self.pool = pool or RolloutPool(
            sources=sources or [], world_model=world_model, judge_model=judge_model, votes=votes, db=db
        )
        self.task_id = task_id or self.pool.task_ids()[0]
        self.pool.catalog.task(self.task_id)
        self.faults: FaultMode = faults
        self.action_space = spaces.Text(max_length=MAX_TEXT, min_length=0, charset=CHARSET)
        self.observation_space = spaces.Text(max_length=MAX_TEXT, min_length=0, charset=CHARSET)
        self.rollout: Rollout | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = options or {}
        if self.rollout is not None:
            self.rollout.close()
        episode_seed = seed if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        task_id = options.get("task_id", self.task_id)
        faults = options.get("faults", self.faults)
        self.rollout = self.pool.open(task_id, faults=faults, seed=episode_seed)
        tools = [
            {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
            for tool in self.rollout.tools
        ]
        observation = json.dumps({"task": self.rollout.brief, "tools": tools}, ensure_ascii=True)
        return observation, {"episode_id": self.rollout.id, "task_id": task_id, "seed": episode_seed}

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        rollout = self.rollout
        if rollout is None or rollout.done:
            raise gym.error.ResetNeeded("call reset() before step(), and again after the episode ended")
        call = parse_action(action)
        if isinstance(call, str):
            error = {"error": {"type": "invalid_action", "message": call}}
            return json.dumps(error, ensure_ascii=True), 0.0, False, False, {"invalid_action": True}
        tool, arguments = call
        result = rollout.call(tool, arguments)
        info: dict[str, Any] = {
            "invalid_action": False,
            "is_error": result.is_error,
            "episode_id": rollout.id,
        }
        observation = ascii_json(result.text)
        if not rollout.done:
            return observation, 0.0, False, False, info
        verdict = rollout.verdict
        info.update(
            judged=verdict is not None and not verdict.unjudged,
            verdict=verdict,
            judge_error=rollout.judge_error,
        )
        reward = verdict.score if verdict is not None and not verdict.unjudged else 0.0
        return observation, reward, True, False, info

    def close(self) -> None:
        if self.rollout is not None:
            self.rollout.close()
            self.rollout = None
        if self._owns_pool:
            self.pool.close()


def parse_action(action: str) -> tuple[str, dict[str, Any]] | str:
    """The (tool, arguments) of a JSON tool call, or the message saying why `action` is not one."""
    try:
        call = json.loads(action)
    except (TypeError, ValueError) as error:
        return f'the action is not JSON ({error}); send {{"tool": NAME, "arguments": {{...}}}}'
    if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
        return 'the action must be a JSON object with a "tool" name and an "arguments" object'
    arguments = call.get("arguments", {})
    if not isinstance(arguments, dict):
        return f'"arguments" must be a JSON object, got {type(arguments).__name__}'
    unknown = sorted(set(call) - {"tool", "arguments"})
    if unknown:
        return f'unknown keys in the action: {", ".join(unknown)} (only "tool" and "arguments")'
    return call["tool"], arguments
