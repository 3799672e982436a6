"""OccuBench's reference harness as read from a user's checkout: its prompts, templates and limits.

The Python files are parsed with `ast` and never imported or run; occusim ships none of their text.
"""

from __future__ import annotations

import ast
import hashlib
import json
import string
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from occusim.environments import OCCUBENCH_PREFIX, OccusimError

HARNESS_PACKAGE = "occubench"
HARNESS_FILES = ("agent.py", "lwm.py", "fault_injection.py", "verifier.py", "evaluate.py")
PROMPT_FAULT_MODES = ("E1", "E2", "E3")


class HarnessError(OccusimError):
    """The OccuBench harness is missing or not in a shape occusim understands; the message says which file."""


class HarnessPrompts(BaseModel):
    """Everything of OccuBench's harness that decides what its models are sent.

    Templates are `str.format` templates whose fields are checked when read (see each field's name in
    the renderers below); `files` maps each harness file read to its SHA-256, for provenance.
    """

    model_config = ConfigDict(frozen=True)

    package: str
    version: str | None
    files: dict[str, str]
    agent_system: str
    date_format: str
    agent_user: str
    agent_max_turns: int
    agent_max_tokens: int
    trajectory_response: str
    trajectory_action: str
    trajectory_observation: str
    world_model_output_format: str
    world_model_past_action: str
    world_model_past_observation: str
    world_model_action: str
    world_model_observation_pattern: str
    world_model_fence_pattern: str
    world_model_max_tokens: int
    world_model_attempts: int
    fault_separator: str
    fault_rules: dict[str, str]
    verifier: str
    verifier_json_pattern: str
    verifier_max_tokens: int
    verifier_votes: int

    def agent_system_prompt(self, scenario_name: str, now: datetime | None = None) -> str:
        current_time = (now or datetime.now()).strftime(self.date_format)
        return self.agent_system.format(task_scenario_name=scenario_name, current_time=current_time)

    def agent_user_prompt(self, instruction: str) -> str:
        return self.agent_user.format(agent_instruction=instruction)

    def fault_prompt(self, mode: str, count: int, duration: int) -> str | None:
        """The fault rules appended to the world model's system prompt, or None for a clean mode."""
        template = self.fault_rules.get(mode)
        if template is None:
            return None
        return template.format(fault_count=count, fault_duration=duration)

    def verifier_prompt(self, *, scenario_name: str, initial_state: str, state_description: str,
                        instruction: str, verification_plan: str, trajectory: str) -> str:
        return self.verifier.format(
            task_scenario_name=scenario_name, task_initial_state=initial_state,
            state_description=state_description, agent_instruction=instruction,
            verification_plan=verification_plan, trajectory=trajectory,
        )


def harness_folder(source: str | Path) -> Path:
    """The harness package for an OccuBench source: SOURCE/occubench/, else beside it (SOURCE/../occubench/).

    `source` may carry the `occubench:` prefix. Raises HarnessError naming both places looked at.
    """
    text = str(source)
    root = Path(text[len(OCCUBENCH_PREFIX):] if text.startswith(OCCUBENCH_PREFIX) else text)
    candidates = [root / HARNESS_PACKAGE, root.parent / HARNESS_PACKAGE]
    for folder in candidates:
        if all((folder / name).is_file() for name in HARNESS_FILES):
            return folder
    raise HarnessError(
        f"no OccuBench harness package beside {root}: --protocol occubench reads its prompts from "
        f"{candidates[0]}/ or {candidates[1]}/ ({', '.join(HARNESS_FILES)}); point --source occubench:PATH "
        "at a checkout of the OccuBench repository"
    )


def load_harness(source: str | Path) -> HarnessPrompts:
    """Read the harness next to an OccuBench source (see `harness_folder`); raises HarnessError."""
    folder = harness_folder(source)
    texts: dict[str, str] = {}
    hashes: dict[str, str] = {}
    for name in HARNESS_FILES:
        data = (folder / name).read_bytes()
        hashes[name] = hashlib.sha256(data).hexdigest()
        texts[name] = data.decode("utf-8")
    reader = _Reader(folder, texts)
    init = folder / "__init__.py"
    version = _module_version(init.read_text(encoding="utf-8")) if init.is_file() else None
    return HarnessPrompts(package=str(folder.resolve()), version=version, files=hashes, **reader.read())


def harness_source(sources: list[str]) -> str:
    """The first `occubench:` source, whose checkout holds the harness; raises HarnessError without one."""
    for source in sources:
        if source.startswith(OCCUBENCH_PREFIX):
            return source
    raise HarnessError("--protocol occubench needs --source occubench:PATH (an OccuBench checkout with its "
                       "harness package), to read OccuBench's prompts from")


def occubench_config(origin: str) -> dict[str, Any]:
    """The world-model config of an imported OccuBench scenario, as OccuBench's harness loads it.

    `origin` is the catalog origin `occubench:PATH/world_model_configs/env_x.json`.
    """
    path = Path(origin[len(OCCUBENCH_PREFIX):] if origin.startswith(OCCUBENCH_PREFIX) else origin)
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise HarnessError(f"{path}: cannot read the OccuBench environment config ({error})") from None
    if not isinstance(config, dict):
        raise HarnessError(f"{path}: an OccuBench environment config must be a JSON object")
    return config


def _module_version(text: str) -> str | None:
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return node.value.value
    return None


class _Reader:
    """Finds each prompt in the harness's syntax trees by its role, not by line numbers."""

    def __init__(self, folder: Path, texts: dict[str, str]) -> None:
        self.folder = folder
        self.trees = {}
        for name, text in texts.items():
            try:
                self.trees[name] = ast.parse(text, filename=str(folder / name))
            except SyntaxError as error:
                raise HarnessError(f"{folder / name}: not valid Python ({error.msg}, line {error.lineno})") from None

    def fail(self, name: str, what: str) -> HarnessError:
        return HarnessError(f"{self.folder / name}: {what} not found; this harness version is not one occusim "
                            "can replicate")

    def read(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        values.update(self._agent())
        values.update(self._world_model())
        values.update(self._faults())
        values.update(self._verifier())
        return values

    # -- agent.py ----------------------------------------------------------------------------------

    def _agent(self) -> dict[str, Any]:
        name = "agent.py"
        tree = self.trees[name]
        constants = _module_strings(tree)
        system = constants.get("EXECUTOR_SYSTEM_PROMPT")
        if system is None:
            raise self.fail(name, "the agent's system prompt (EXECUTOR_SYSTEM_PROMPT)")
        agent = _class(tree, "ExecutorAgent")
        if agent is None:
            raise self.fail(name, "class ExecutorAgent")
        defaults = _defaults(_method(agent, "__init__"))
        execute = _method(agent, "execute")
        if execute is None or "max_steps" not in defaults or "max_tokens" not in defaults:
            raise self.fail(name, "ExecutorAgent's max_steps/max_tokens defaults and execute()")
        date_format = next(
            (
                call.args[0].value
                for call in _calls(execute)
                if _attr(call) == "strftime" and call.args and isinstance(call.args[0], ast.Constant)
            ),
            None,
        )
        user = self._agent_user(execute)
        trajectory = _appended_templates(execute, "trajectory_parts")
        response = trajectory.get(frozenset({"content"}))
        action = trajectory.get(frozenset({"tool_name", "tool_args"}))
        observation = trajectory.get(frozenset({"tool_name", "observation"}))
        if not isinstance(date_format, str) or user is None or None in (response, action, observation):
            raise self.fail(name, "the date format, user message or trajectory lines of ExecutorAgent.execute")
        return {
            "agent_system": _checked(system, {"task_scenario_name", "current_time"}, name),
            "date_format": date_format,
            "agent_user": _checked(user, {"agent_instruction"}, name),
            "agent_max_turns": defaults["max_steps"],
            "agent_max_tokens": defaults["max_tokens"],
            "trajectory_response": response,
            "trajectory_action": action,
            "trajectory_observation": observation,
        }

    @staticmethod
    def _agent_user(execute: ast.FunctionDef) -> str | None:
        """The task message without a solution plan: the instruction line plus the no-plan closing line."""
        start = closing = None
        for node in ast.walk(execute):
            if (isinstance(node, ast.Assign) and _names(node.targets) == ["prompt"]
                    and isinstance(node.value, ast.JoinedStr)):
                start = _fstring_template(node.value)
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "solution_plan":
                for statement in node.orelse:
                    if (isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name)
                            and statement.target.id == "prompt" and isinstance(statement.value, ast.Constant)
                            and isinstance(statement.value.value, str)):
                        closing = _escape(statement.value.value)
        return None if start is None or closing is None else start + closing

    # -- lwm.py ------------------------------------------------------------------------------------

    def _world_model(self) -> dict[str, Any]:
        name = "lwm.py"
        tree = self.trees[name]
        simulate = _function(tree, "simulate_tool_call")
        call_llm = _function(tree, "call_llm")
        call_world_model = _function(tree, "call_world_model")
        parse = _function(tree, "parse_json_from_response")
        if None in (simulate, call_llm, call_world_model, parse):
            raise self.fail(name, "simulate_tool_call, call_llm, call_world_model and parse_json_from_response")
        assert simulate is not None and call_llm is not None and call_world_model is not None and parse is not None
        output_format = next(
            (
                node.value.right.value
                for node in ast.walk(simulate)
                if isinstance(node, ast.Assign) and _names(node.targets) == ["system_prompt"]
                and isinstance(node.value, ast.BinOp) and isinstance(node.value.right, ast.Constant)
            ),
            None,
        )
        messages = _appended_templates(simulate, "messages")
        past_action = messages.get(frozenset({"action"}))
        past_observation = messages.get(frozenset({"observation"}))
        action = messages.get(frozenset({"tool_call_json"}))
        observation_pattern = _first_pattern(call_world_model)
        fence_pattern = _first_pattern(parse)
        max_tokens = _defaults(call_llm).get("max_tokens")
        attempts = _defaults(simulate).get("max_retries")
        if (not isinstance(output_format, str) or None in (past_action, past_observation, action)
                or observation_pattern is None or fence_pattern is None
                or not isinstance(max_tokens, int) or not isinstance(attempts, int)):
            raise self.fail(name, "the world model's messages, tags, parsing or limits")
        return {
            "world_model_output_format": output_format,
            "world_model_past_action": past_action,
            "world_model_past_observation": past_observation,
            "world_model_action": action,
            "world_model_observation_pattern": observation_pattern,
            "world_model_fence_pattern": fence_pattern,
            "world_model_max_tokens": max_tokens,
            "world_model_attempts": attempts,
        }

    # -- fault_injection.py and evaluate.py --------------------------------------------------------

    def _faults(self) -> dict[str, Any]:
        name = "fault_injection.py"
        tree = self.trees[name]
        constants = _module_strings(tree)
        build = _function(tree, "build_fault_prompt")
        table = next((node for node in ast.walk(build) if isinstance(node, ast.Dict)), None) if build else None
        rules: dict[str, str] = {}
        if table is not None:
            for key, value in zip(table.keys, table.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(value, ast.Name) and value.id in constants:
                    rules[str(key.value)] = _checked(constants[value.id], {"fault_count", "fault_duration"}, name)
        if sorted(rules) != list(PROMPT_FAULT_MODES):
            raise self.fail(name, "the E1/E2/E3 templates of build_fault_prompt")
        separator = next(
            (
                node.value.left.value
                for node in ast.walk(self.trees["evaluate.py"])
                if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript)
                and _constant(node.target.slice) == "world_model_system_prompt"
                and isinstance(node.value, ast.BinOp) and isinstance(node.value.left, ast.Constant)
            ),
            None,
        )
        if not isinstance(separator, str):
            raise self.fail("evaluate.py", "where the fault rules join the world model's prompt")
        return {"fault_rules": rules, "fault_separator": separator}

    # -- verifier.py -------------------------------------------------------------------------------

    def _verifier(self) -> dict[str, Any]:
        name = "verifier.py"
        tree = self.trees[name]
        prompt = _module_strings(tree).get("VERIFIER_PROMPT")
        verifier = _class(tree, "Verifier")
        single = _method(verifier, "_single_check") if verifier else None
        votes = _defaults(_method(verifier, "__init__")).get("num_votes") if verifier else None
        max_tokens = next(
            (
                keyword.value.value
                for call in (_calls(single) if single else [])
                for keyword in call.keywords
                if keyword.arg == "max_tokens" and isinstance(keyword.value, ast.Constant)
            ),
            None,
        )
        pattern = _first_pattern(single) if single else None
        if prompt is None or not isinstance(votes, int) or not isinstance(max_tokens, int) or pattern is None:
            raise self.fail(name, "VERIFIER_PROMPT, the vote count, max_tokens and the verdict pattern")
        fields = {"task_scenario_name", "task_initial_state", "state_description", "agent_instruction",
                  "verification_plan", "trajectory"}
        return {
            "verifier": _checked(prompt, fields, name),
            "verifier_json_pattern": pattern,
            "verifier_max_tokens": max_tokens,
            "verifier_votes": votes,
        }


def _module_strings(tree: ast.Module) -> dict[str, str]:
    """Module-level string constants, including ones written as a literal followed by `.strip()`, by name."""
    found: dict[str, str] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        text = _constant(value)
        if text is None and isinstance(value, ast.Call) and not value.args and _attr(value) == "strip":
            inner = _constant(value.func.value) if isinstance(value.func, ast.Attribute) else None
            text = inner.strip() if inner is not None else None
        if text is not None:
            found[node.targets[0].id] = text
    return found


def _constant(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _defaults(function: ast.FunctionDef | None) -> dict[str, Any]:
    """Constant default values of a function's parameters, by name."""
    if function is None:
        return {}
    args = function.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
    pairs += [(arg, default) for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True) if default]
    return {arg.arg: default.value for arg, default in pairs if isinstance(default, ast.Constant)}


def _calls(node: ast.AST) -> Iterator[ast.Call]:
    return (n for n in ast.walk(node) if isinstance(n, ast.Call))


def _attr(call: ast.Call) -> str | None:
    return call.func.attr if isinstance(call.func, ast.Attribute) else None


def _target(call: ast.Call) -> str | None:
    func = call.func
    return func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None


def _names(targets: list[ast.expr]) -> list[str]:
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _first_pattern(function: ast.FunctionDef) -> str | None:
    """The pattern of the first `re.search(PATTERN, ...)` in a function."""
    for call in _calls(function):
        if _attr(call) == "search" and _target(call) == "re" and call.args:
            return _constant(call.args[0])
    return None


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _fstring_template(node: ast.JoinedStr) -> str:
    """An f-string as a format template: `f"<a>{entry['action']}"` -> `"<a>{action}"`."""
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(_escape(str(value.value)))
        elif isinstance(value, ast.FormattedValue):
            parts.append("{" + _field_name(value.value) + "}")
    return "".join(parts)


def _field_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and _constant(node.slice) is not None:
        return str(_constant(node.slice))
    return "?"


def _appended_templates(function: ast.FunctionDef, target: str) -> dict[frozenset[str], str]:
    """The f-strings a function appends to list `target` (or the `content` of dicts it appends), by field set."""
    found: dict[frozenset[str], str] = {}
    for call in _calls(function):
        if _attr(call) != "append" or _target(call) != target or not call.args:
            continue
        value = call.args[0]
        if isinstance(value, ast.Dict):
            value = next((v for k, v in zip(value.keys, value.values, strict=True)
                          if k is not None and _constant(k) == "content"), value)
        if isinstance(value, ast.JoinedStr):
            template = _fstring_template(value)
            found[frozenset(_fields(template))] = template
    return found


def _fields(template: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}


def _checked(template: str, allowed: set[str], source: str) -> str:
    """A format template whose fields are plain names from `allowed` (no attribute or index access), with no
    width, precision or conversion: `{fault_count:>300000000}` would build a prompt of 300 M characters."""
    try:
        fields = _fields(template)
        shaped = sorted({f"{{{field}{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}}"
                         for _, field, spec, conversion in string.Formatter().parse(template)
                         if field is not None and (spec or conversion)})
    except ValueError as error:
        raise HarnessError(f"{source}: a prompt template is not a format string ({error})") from None
    if shaped:
        raise HarnessError(f"{source}: a prompt template formats its fields ({', '.join(shaped)}); occusim fills "
                           "only plain fields such as {fault_count}")
    unexpected = sorted(field for field in fields if field not in allowed)
    if unexpected:
        raise HarnessError(f"{source}: a prompt template has fields occusim cannot fill: {', '.join(unexpected)}")
    return template

