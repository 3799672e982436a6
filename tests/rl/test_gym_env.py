"""OccusimEnv: Gymnasium's own checker, and a scripted episode rewarded with what `occusim judge` gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gymnasium.utils.env_checker import check_env

from occusim.rl import OccusimEnv
from tests.helpers import CHEST_PAIN, judge_by_cli, passing_judge, write_triage_source
from tests.helpers.triage_worlds import TRIAGE_WORLD


@pytest.fixture
def env(tmp_path: Path) -> OccusimEnv:
    made = OccusimEnv(
        CHEST_PAIN,
        world_model=TRIAGE_WORLD,
        judge_model=passing_judge(),
        sources=[str(write_triage_source(tmp_path))],
        db=str(tmp_path / "episodes.db"),
    )
    yield made
    made.close()


def act(tool: str, **arguments: object) -> str:
    return json.dumps({"tool": tool, "arguments": arguments})


def test_gymnasium_checker_accepts_the_environment(env: OccusimEnv) -> None:
    check_env(env, skip_render_check=True)


def test_reset_opens_an_episode_with_the_brief_and_tools_without_reloading_the_catalog(
    env: OccusimEnv,
) -> None:
    catalog = env.pool.catalog
    observation, info = env.reset(seed=7)
    opened = json.loads(observation)
    assert "chest pain" in opened["task"]
    assert [tool["name"] for tool in opened["tools"]] == [
        "list_patients",
        "get_patient",
        "set_priority",
        "submit_result",
    ]
    first = info["episode_id"]
    _, info = env.reset(seed=7)
    assert info["episode_id"] != first
    assert env.pool.catalog is catalog


def test_an_invalid_action_is_an_error_observation_not_a_crash(env: OccusimEnv) -> None:
    env.reset(seed=0)
    for action in ("not json", "[1]", '{"tool": "get_patient", "arguments": 3}', '{"tool": "x", "extra": 1}'):
        observation, reward, terminated, truncated, info = env.step(action)
        assert json.loads(observation)["error"]["type"] == "invalid_action"
        assert (reward, terminated, truncated, info["invalid_action"]) == (0.0, False, False, True)
    # A call the server refuses is sent, recorded and shown as the server's error.
    observation, _, terminated, _, info = env.step(act("set_priority", patient_id="P1", priority=9))
    assert info["is_error"] and not terminated
    assert json.loads(observation)["error"]["type"] == "invalid_arguments"


@pytest.mark.parametrize("priority", [1, 2])
def test_the_reward_is_the_verdict_occusim_judge_gives(
    env: OccusimEnv, tmp_path: Path, priority: int
) -> None:
    _, info = env.reset(seed=3)
    observation, reward, terminated, _, _ = env.step(act("set_priority", patient_id="P1", priority=priority))
    assert json.loads(observation) == {"ok": True, "patient_id": "P1", "priority": priority}
    assert (reward, terminated) == (0.0, False)
    observation, reward, terminated, truncated, end = env.step(act("submit_result", answer="P1 set"))
    assert (terminated, truncated, end["judged"]) == (True, False, True)
    assert json.loads(observation)["status"] == "judged"
    judged = judge_by_cli(info["episode_id"], tmp_path / "episodes.db", tmp_path / "triage-desk.yaml", "--skip-llm")
    assert reward == judged["score"] == (1.0 if priority == 1 else 0.0)
    with pytest.raises(Exception, match="reset"):
        env.step(act("list_patients"))
