"""occusim.rl.trl: classes whose methods are an episode's tools, typed and documented from their schemas."""

from __future__ import annotations

import inspect
import json
from typing import Literal

import pytest

from occusim.rl import RolloutError, RolloutPool
from occusim.rl.trl import OccusimToolEnv, environment_class, python_type, tool_method
from tests.helpers import CHEST_PAIN, passing_judge, write_triage_source
from tests.helpers.triage_worlds import TRIAGE_WORLD


@pytest.fixture(scope="module")
def triage_class(tmp_path_factory: pytest.TempPathFactory) -> type[OccusimToolEnv]:
    folder = tmp_path_factory.mktemp("trl")
    pool = RolloutPool(
        sources=[write_triage_source(folder)], world_model=TRIAGE_WORLD, judge_model=passing_judge()
    )
    yield environment_class(CHEST_PAIN, pool=pool)
    pool.close()


def tools_of(cls: type) -> list[str]:
    # How TRL's GRPOTrainer finds the tools: the public functions of the class, reset and get_reward aside.
    return [
        name
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def test_the_methods_are_the_episodes_tools_typed_and_documented(triage_class: type[OccusimToolEnv]) -> None:
    assert tools_of(triage_class) == ["get_patient", "list_patients", "set_priority", "submit_result"]
    signature = inspect.signature(triage_class.set_priority)
    assert [(p.name, p.annotation, p.default) for p in signature.parameters.values()][1:] == [
        ("patient_id", str, inspect.Parameter.empty),
        ("priority", int, inspect.Parameter.empty),
    ]
    assert triage_class.set_priority.__doc__.splitlines()[0] == "Set a patient's triage priority."
    assert "Args:" in triage_class.set_priority.__doc__
    assert list(inspect.signature(triage_class.list_patients).parameters) == ["self"]


def test_json_schema_types_become_python_hints() -> None:
    assert python_type({"type": "array", "items": {"type": "integer"}}) == list[int]
    assert python_type({"type": ["string", "null"]}) == str | None
    assert python_type({"enum": ["a", "b"]}) == Literal["a", "b"]
    assert python_type({"type": "object", "properties": {}}) is dict


def test_an_instance_plays_one_episode_per_reset_rewarded_by_the_verdict(
    triage_class: type[OccusimToolEnv],
) -> None:
    env = triage_class()
    with pytest.raises(RolloutError, match="reset"):
        env.set_priority(patient_id="P1", priority=1)
    assert "chest pain" in env.reset(task_id=CHEST_PAIN, prompt="ignored")
    assert env.get_reward() == 0.0  # nothing submitted yet
    assert json.loads(env.set_priority(patient_id="P1", priority=1))["priority"] == 1
    assert json.loads(env.submit_result(answer="done"))["status"] == "judged"
    assert env.get_reward() == 1.0
    assert "episode_closed" in env.list_patients()
    env.reset(task_id=CHEST_PAIN)
    env.set_priority(patient_id="P1", priority=2)
    env.submit_result(answer="done")
    assert env.get_reward() == 0.0


def test_a_row_of_another_scenario_is_refused(triage_class: type[OccusimToolEnv]) -> None:
    other = next(
        task_id for task_id in triage_class.pool.catalog.tasks if not task_id.startswith("triage-desk/")
    )
    with pytest.raises(RolloutError, match="scenario"):
        triage_class().reset(task_id=other)


def test_a_parameter_named_as_a_python_keyword_gets_an_underscore() -> None:
    schema = {"type": "object", "properties": {"from": {"type": "string", "description": "Start date."}}}
    method = tool_method("get_audit_log", "Read the log.", schema)
    assert list(inspect.signature(method).parameters) == ["self", "from_"]
    assert "from_: Start date." in (method.__doc__ or "")

    class Recorder:
        def _call(self, tool: str, arguments: dict[str, object]) -> str:
            return f"{tool} {arguments}"

    assert method(Recorder(), from_="2026-01-01") == "get_audit_log {'from': '2026-01-01'}"
