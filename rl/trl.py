"""occusim tasks as TRL environments: classes for `GRPOTrainer(environment_factory=...)`.

TRL makes one instance per rollout, calls `reset(**row)` with the dataset row before generation (a returned
string is added to the prompt), offers every public method as a tool (its JSON schema read from the type
hints and the Google-style docstring, as transformers' `get_json_schema` does), and scores the rollout with
`get_reward()`. `environment_class` builds such a class for the tasks of one scenario: its tool methods are
generated from an episode's `tools/list` (parameter types and docstrings from the tools' JSON schemas),
each instance plays one episode per `reset`, and `get_reward` is the judge's verdict score. TRL itself is
not imported: the classes are plain Python.

    from occusim.rl.trl import environment_class

    Triage = environment_class("triage-desk/chest-pain", world_model="openai/gpt-4.1", judge_model="openai/gpt-4.1")
    trainer = GRPOTrainer(model=..., train_dataset=rows, environment_factory=Triage, ...)

Rows name their task in `task_id` (default: the task the class was built for), and may set `faults`
(E0-E3) and `seed` (default 0, so that a group of rollouts of one row shares its fault schedule and the
world model's cached answers). `environment_classes` builds one class per scenario for TRL's dict form,
whose rows select theirs by `environment` (the scenario id).
"""

from __future__ import annotations

import inspect
import keyword
import logging
import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal

from ._rollouts import Rollout, RolloutError, RolloutPool

log = logging.getLogger("occusim.rl")

_SCALARS: dict[str, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
    "array": list,
}


class OccusimToolEnv:
    """The base of the generated classes: one occusim episode per `reset`, rewarded by the judge.

    Subclasses made by `environment_class` add one method per tool of the scenario (`submit_result`
    included); the names below are all TRL looks for besides them.
    """

    pool: ClassVar[RolloutPool]
    default_task: ClassVar[str]
    scenario_id: ClassVar[str]

    def __init__(self) -> None:
        self._rollout: Rollout | None = None

    def reset(self, **row: Any) -> str | None:
        """Open an episode of the row's `task_id` (with its `faults` and `seed`); the task brief, for the prompt."""
        if self._rollout is not None:
            self._rollout.close()
            self._rollout = None
        task_id = row.get("task_id") or self.default_task
        task = self.pool.catalog.task(task_id)
        if self.pool.catalog.scenario_of(task).id != self.scenario_id:
            raise RolloutError(
                f"task {task_id!r} is not one of scenario {self.scenario_id!r}, whose tools this "
                "class offers; build a class per scenario (environment_classes)"
            )
        self._rollout = self.pool.open(
            task_id, faults=row.get("faults") or "E0", seed=int(row.get("seed") or 0)
        )
        return self._rollout.brief

    def get_reward(self) -> float | None:
        """The judge's score of the episode (0.0 when nothing was submitted); None when the judge could not
        score it, which TRL leaves out of the group's rewards."""
        rollout = self._rollout
        if rollout is None or not rollout.submitted:
            return 0.0
        verdict = rollout.verdict
        if verdict is None or verdict.unjudged:
            log.warning(
                "episode %s was not judged (%s): no reward",
                rollout.id,
                rollout.judge_error or "no judge model, or undecided checks",
            )
            return None
        return verdict.score

    def _call(self, tool: str, arguments: dict[str, Any]) -> str:
        if self._rollout is None:
            raise RolloutError("reset() opens the episode before any tool is called")
        if self._rollout.done:
            return '{"error": {"type": "episode_closed", "message": "the episode is closed: submit_result was called"}}'
        # Arguments left at their default (None) are not sent: the tool's schema left them optional.
        sent = {name: value for name, value in arguments.items() if value is not None}
        return self._rollout.call(tool, sent).text


def environment_class(
    task_id: str,
    *,
    world_model: str | None = None,
    judge_model: str | None = None,
    sources: Sequence[str] = (),
    votes: int = 3,
    pool: RolloutPool | None = None,
) -> type[OccusimToolEnv]:
    """A TRL environment class for the tasks of `task_id`'s scenario, its tools read from one of its episodes."""
    pool = pool or RolloutPool(sources=sources, world_model=world_model, judge_model=judge_model, votes=votes)
    task = pool.catalog.task(task_id)
    scenario = pool.catalog.scenario_of(task)
    probe = pool.open(task_id)
    try:
        tools = probe.tools
    finally:
        probe.close()
    members: dict[str, Any] = {
        "pool": pool,
        "default_task": task_id,
        "scenario_id": scenario.id,
        "__doc__": f"{scenario.occupation}: the tools of {scenario.name} as an occusim episode.",
    }
    for tool in tools:
        if (
            not tool.name.isidentifier()
            or keyword.iskeyword(tool.name)
            or tool.name in members
            or tool.name.startswith("_")
            or hasattr(OccusimToolEnv, tool.name)
        ):
            raise RolloutError(
                f"tool {tool.name!r} of scenario {scenario.id!r} cannot be a Python method name"
            )
        members[tool.name] = tool_method(tool.name, tool.description or "", tool.input_schema)
    name = (
        "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", scenario.id) if part) or "Scenario"
    )
    return type(f"{name}Env", (OccusimToolEnv,), members)


def environment_classes(
    task_ids: Sequence[str],
    *,
    world_model: str | None = None,
    judge_model: str | None = None,
    sources: Sequence[str] = (),
    votes: int = 3,
) -> dict[str, type[OccusimToolEnv]]:
    """One class per scenario of `task_ids`, keyed by scenario id (TRL's dict `environment_factory`; each row's
    `environment` names its task's scenario). They share one catalog and one engine."""
    pool = RolloutPool(sources=sources, world_model=world_model, judge_model=judge_model, votes=votes)
    classes: dict[str, type[OccusimToolEnv]] = {}
    for task_id in task_ids:
        scenario_id = pool.catalog.scenario_of(pool.catalog.task(task_id)).id
        if scenario_id not in classes:
            classes[scenario_id] = environment_class(task_id, pool=pool)
    return classes


def tool_method(name: str, description: str, schema: dict[str, Any]) -> Callable[..., str]:
    """A method calling tool `name`, with a typed signature and a Google-style docstring from its JSON schema."""
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    lines = [_one_line(description) or f"Call {name}.", ""]
    if properties:
        lines.append("Args:")
    # A property named as a Python keyword (`from`) becomes a parameter with an underscore (`from_`).
    renamed: dict[str, str] = {}
    # Required parameters first: Python wants those without a default before the others.
    for key in sorted(properties, key=lambda key: key not in required):
        parameter = f"{key}_" if keyword.iskeyword(key) else key
        if (
            not parameter.isidentifier()
            or parameter in renamed
            or parameter in properties
            and parameter != key
        ):
            raise RolloutError(f"parameter {key!r} of tool {name!r} cannot be a Python parameter name")
        renamed[parameter] = key
        hint = python_type(properties[key])
        if key not in required:
            hint = hint | None
        annotations[parameter] = hint
        parameters.append(
            inspect.Parameter(
                parameter,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                annotation=hint,
                default=inspect.Parameter.empty if key in required else None,
            )
        )
        lines.append(
            f"    {parameter}: {_one_line(properties[key].get('description', '')) or _described(properties[key])}"
        )
    annotations["return"] = str

    def method(self: OccusimToolEnv, **arguments: Any) -> str:
        return self._call(name, {renamed.get(key, key): value for key, value in arguments.items()})

    method.__name__ = method.__qualname__ = name
    method.__doc__ = "\n".join(lines).rstrip()
    method.__annotations__ = annotations
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    return method


def python_type(schema: dict[str, Any]) -> Any:
    """The Python type hint `get_json_schema` turns back into (roughly) this JSON schema."""
    if (
        "enum" in schema
        and schema["enum"]
        and all(isinstance(value, str | int | float | bool) for value in schema["enum"])
    ):
        return Literal.__getitem__(tuple(schema["enum"]))
    kind = schema.get("type")
    if isinstance(kind, list):
        types = [python_type({**schema, "type": one}) for one in kind if one != "null"]
        hint: Any = types[0] if types else Any
        for more in types[1:]:
            hint = hint | more
        return hint | None if "null" in kind else hint
    if kind == "array":
        items = schema.get("items")
        return list.__class_getitem__(python_type(items)) if isinstance(items, dict) and items else list
    if kind == "object":
        return dict
    return _SCALARS.get(kind, Any) if isinstance(kind, str) else Any


def _described(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "value")
    return f"A {kind if isinstance(kind, str) else ' or '.join(kind)}."


def _one_line(text: str) -> str:
    return " ".join(text.split())
