"""Read the public OccuBench release (tasks, world-model configs, scenario pool) as native scenarios.

The release is generated text, so the reader is liberal: odd shapes are repaired into a valid scenario,
and only rows that cannot be interpreted are reported, each naming its file and line.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._categories import CATEGORIES, category_slug
from ._collections import infer_collections
from ._errors import ScenarioError, ScenarioErrors
from ._metaschema_check import schema_problem
from ._parse import parse_scenario
from ._read_only_inference import infer_read_only
from ._scenario import Scenario

# A scenario source naming a checkout of the release: `occubench:PATH`.
OCCUBENCH_PREFIX = "occubench:"
TASKS_FILE = "eval_benchmark_solvable.jsonl"
POOL_FILE = "task_scenario_all_pool.jsonl"
CONFIGS_DIR = "world_model_configs"
SCENARIO_PREFIX = "occubench-"
TASK_PREFIX = "occubench/"
DEFAULT_MAX_STEPS = 30
NO_DESCRIPTION = "(no description in the source)"
NO_PLAN = (
    "(no verification plan in the source) Check that the final answer carries out the instruction "
    "correctly and completely, using only facts the tools returned."
)
GENERIC_RULES = (
    "Simulate the tools of this environment faithfully: keep the state consistent across calls, follow "
    "each tool's description and return only the fields it declares. Invalid arguments or operations "
    'that conflict with the state return {"error": "<why the call failed>"}.'
)

# The pre-rendered prompt ends with the initial state, the state descriptions and the action set as
# literal text; the runtime renders those itself, so the rules stop where that tail starts.
_RENDERED_TAIL = re.compile(r"^\{\{?initial_state\}\}?:", re.MULTILINE)
_ESCAPED_BRACES = re.compile(r"\{\{|\}\}")
_TOOL_NAME_CHARS = re.compile(r"[^A-Za-z0-9_\-]+")
_SLUG_CHARS = re.compile(r"[^a-z0-9\-_]+")
_TASK_ID_CHARS = re.compile(r"[^a-z0-9\-_./]+")
_TYPE_ALIASES = {
    "int": "integer",
    "long": "integer",
    "float": "number",
    "double": "number",
    "decimal": "number",
    "str": "string",
    "text": "string",
    "bool": "boolean",
    "dict": "object",
    "map": "object",
    "list": "array",
    "none": "null",
}


@dataclass
class _TaskRow:
    """One evaluation task and where it was read from."""

    line: int
    data: dict[str, Any]
    env_name: str
    scenario_name: str


@dataclass
class _Release:
    root: Path
    tasks_file: Path
    pool: dict[str, tuple[str, str]] = field(default_factory=dict)
    errors: list[ScenarioError] = field(default_factory=list)


def load_occubench(root: str | Path) -> list[tuple[Scenario, str]]:
    """Read an OccuBench release folder: one scenario per referenced world-model config, holding its tasks.

    Mapping: scenario id `occubench-<env id>`; name, category and domain from the task's
    `task_scenario_name` and its pool row; occupation from the domain and scenario name (OccuBench names
    no role); tools from `action_set_definitions` (`parameters` -> input_schema, `example_output` kept);
    `state_description` and `task_initial_state`; `simulator_prompt` is the verbatim world-model prompt
    and `rules` the same prompt without its pre-rendered state/tool tail. Each task becomes
    `occubench/<task_id>` with its instruction, difficulty and verification plan, no rubric items, no
    reference solution and max_steps 30. Configs that no task names are not read.

    Returns (scenario, origin) pairs with origins like `occubench:ROOT/world_model_configs/env_x.json`.
    Raises ScenarioErrors listing every row that could not be interpreted.
    """
    release = _Release(root=Path(root), tasks_file=Path(root) / TASKS_FILE)
    if not release.root.is_dir():
        raise ScenarioErrors(
            [
                ScenarioError(
                    str(root),
                    "",
                    f"no such folder; expected an OccuBench release holding {TASKS_FILE}, {POOL_FILE} "
                    f"and {CONFIGS_DIR}/",
                )
            ]
        )
    release.pool = _read_pool(release)
    by_env: dict[str, list[_TaskRow]] = {}
    for row in _read_tasks(release):
        by_env.setdefault(row.env_name, []).append(row)
    loaded: list[tuple[Scenario, str]] = []
    for env_name, rows in by_env.items():
        scenario_origin = _scenario(release, env_name, rows)
        if scenario_origin is not None:
            loaded.append(scenario_origin)
    if release.errors:
        raise ScenarioErrors(release.errors)
    return loaded


def _jsonl(path: Path, errors: list[ScenarioError]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a JSON Lines file with their line numbers; blank lines are skipped, bad ones reported."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as error:
        errors.append(ScenarioError(source, "", f"cannot read file: {error.strerror or error}"))
        return
    # Only "\n" ends a row: str.splitlines would also split on separators inside JSON strings.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            errors.append(
                ScenarioError(source, f"line {number}", f"invalid JSON: {error.msg} (column {error.colno})")
            )
            continue
        if not isinstance(row, dict):
            errors.append(
                ScenarioError(source, f"line {number}", f"expected a JSON object, got {_kind(row)}")
            )
            continue
        yield number, row


def _read_pool(release: _Release) -> dict[str, tuple[str, str]]:
    """Scenario name -> (category, domain), from the scenario pool."""
    path = release.root / POOL_FILE
    pool: dict[str, tuple[str, str]] = {}
    by_slug = {category_slug(c): c for c in CATEGORIES}
    for number, row in _jsonl(path, release.errors):
        name = _text(row.get("task_scenario_name"))
        if not name:
            release.errors.append(ScenarioError(str(path), f"line {number}", "missing `task_scenario_name`"))
            continue
        raw_category = _text(row.get("category"))
        category = by_slug.get(category_slug(raw_category))
        if category is None:
            release.errors.append(
                ScenarioError(
                    str(path),
                    f"line {number}",
                    f"category {raw_category!r} is not one of the OccuBench categories: {', '.join(CATEGORIES)}",
                )
            )
            continue
        pool[_name_key(name)] = (category, _text(row.get("domain")) or "General")
    return pool


def _read_tasks(release: _Release) -> Iterator[_TaskRow]:
    source = str(release.tasks_file)
    for number, row in _jsonl(release.tasks_file, release.errors):
        missing = [key for key in ("task_id", "env_name", "agent_instruction") if _text(row.get(key)) == ""]
        if missing:
            names = ", ".join(f"`{key}`" for key in missing)
            release.errors.append(ScenarioError(source, f"line {number}", f"missing {names}"))
            continue
        scenario_name = _text(row.get("task_scenario_name"))
        if _name_key(scenario_name) not in release.pool:
            release.errors.append(
                ScenarioError(
                    source,
                    f"line {number}",
                    f"task_scenario_name {scenario_name!r} has no row in {POOL_FILE}, so its category and "
                    "domain are unknown",
                )
            )
            continue
        yield _TaskRow(number, row, _text(row["env_name"]), scenario_name)


def _config_path(release: _Release, env_name: str) -> Path | None:
    folder = release.root / CONFIGS_DIR
    for stem in (env_name, f"env_{env_name}"):
        candidate = folder / f"{stem}.json"
        if candidate.is_file():
            return candidate
    return None


def _scenario(release: _Release, env_name: str, rows: list[_TaskRow]) -> tuple[Scenario, str] | None:
    path = _config_path(release, env_name)
    if path is None:
        for row in rows:
            release.errors.append(
                ScenarioError(
                    str(release.tasks_file),
                    f"line {row.line}",
                    f"env_name {env_name!r} has no {CONFIGS_DIR}/{env_name}.json",
                )
            )
        return None
    origin = f"{OCCUBENCH_PREFIX}{path}"
    try:
        config = json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as error:
        release.errors.append(ScenarioError(str(path), "", f"cannot read file: {error.strerror or error}"))
        return None
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        release.errors.append(ScenarioError(str(path), where, f"invalid JSON: {error.msg}"))
        return None
    if not isinstance(config, dict):
        release.errors.append(ScenarioError(str(path), "", f"expected a JSON object, got {_kind(config)}"))
        return None
    tasks = [_task(release, row) for row in rows]
    if any(task is None for task in tasks):
        return None
    data = _scenario_data(config, path, rows[0].scenario_name, release)
    if data is None:
        return None
    data["tasks"] = tasks
    try:
        return parse_scenario(data, origin), origin
    except ScenarioErrors as error:
        release.errors.extend(error.errors)
        return None


def _scenario_data(
    config: dict[str, Any], path: Path, scenario_name: str, release: _Release
) -> dict[str, Any] | None:
    category, domain = release.pool[_name_key(scenario_name)]
    env_name = _text(config.get("environment_name")) or path.stem
    tools = _tools(config.get("action_set_definitions"), path, release.errors)
    if tools is None:
        return None
    state = _state(config.get("task_initial_state"))
    prompt = config.get("world_model_system_prompt")
    prompt = prompt if isinstance(prompt, str) and prompt.strip() else None
    return {
        "id": _scenario_id(path.stem),
        "name": f"{scenario_name} ({env_name})",
        "category": category,
        "domain": domain,
        "occupation": occupation_for(scenario_name, domain),
        "summary": f"OccuBench environment {env_name} for the {scenario_name} scenario ({domain}, {category}).",
        "version": "1",
        "rules": rules_from_prompt(prompt) if prompt else GENERIC_RULES,
        "tools": tools,
        "state_descriptions": _descriptions(config.get("state_description"), state),
        "initial_state": state,
        "collections": [c.model_dump(exclude_defaults=True) | {"inferred": True} for c in infer_collections(state)],
        "simulator_prompt": prompt,
    }


def occupation_for(scenario_name: str, domain: str) -> str:
    """OccuBench names no role, so the role is the domain's professional doing the scenario's work.

    `Property Valuation Assessment`, `Real Estate` -> `Real Estate professional (property valuation assessment)`.
    """
    work = " ".join(scenario_name.split())
    return f"{domain} professional ({work.lower()})" if work else f"{domain} professional"


def rules_from_prompt(prompt: str) -> str:
    """The simulator prompt without its pre-rendered state/tool tail, with template brace escapes undone."""
    tails = list(_RENDERED_TAIL.finditer(prompt))
    body = prompt[: tails[-1].start()] if tails else prompt
    body = unescape_braces(body.strip())
    return body or GENERIC_RULES


def unescape_braces(text: str) -> str:
    """Undo `{{`/`}}` format-template escapes, but only when every brace in `text` is so escaped.

    A lone brace means the text is not a format template (e.g. literal JSON, where `}}` is real), so it
    is returned unchanged. Pairs are taken from the left, as str.format reads them.
    """
    if "{" not in text and "}" not in text:
        return text
    lone = _ESCAPED_BRACES.sub("", text)
    if "{" in lone or "}" in lone:
        return text
    return text.replace("{{", "{").replace("}}", "}")


def _task(release: _Release, row: _TaskRow) -> dict[str, Any] | None:
    data = row.data
    difficulty = _difficulty(data.get("difficulty_level"))
    if difficulty is None:
        release.errors.append(
            ScenarioError(
                str(release.tasks_file),
                f"line {row.line}",
                f"difficulty_level {data.get('difficulty_level')!r} is not a number from 1 to 3",
            )
        )
        return None
    plan = data.get("verification_plan")
    if isinstance(plan, list):
        plan = "\n".join(_text(step) for step in plan)
    plan = _text(plan)
    return {
        "id": TASK_PREFIX + (_TASK_ID_CHARS.sub("-", _text(data["task_id"]).lower()).strip("-./") or "task"),
        "title": row.scenario_name or row.env_name,
        "instruction": _text(data["agent_instruction"]),
        "difficulty": difficulty,
        "verification_plan": plan if plan.strip() else NO_PLAN,
        "max_steps": DEFAULT_MAX_STEPS,
    }


def _difficulty(value: Any) -> int | None:
    try:
        number = int(float(value))
    except (TypeError, ValueError, OverflowError):
        return None
    return min(max(number, 1), 3)


def _tools(raw: Any, path: Path, errors: list[ScenarioError]) -> list[dict[str, Any]] | None:
    """Tools from `action_set_definitions`: a list of definitions, or a mapping from name to definition."""
    if isinstance(raw, str):
        raw = _json_or(raw, raw)
    if isinstance(raw, dict):
        raw = [
            {"name": name, **definition} if isinstance(definition, dict) else definition
            for name, definition in raw.items()
        ]
    if not isinstance(raw, list) or not raw:
        errors.append(
            ScenarioError(
                str(path), "action_set_definitions", f"expected a non-empty list of tools, got {_kind(raw)}"
            )
        )
        return None
    tools: list[dict[str, Any]] = []
    taken: set[str] = set()
    for index, definition in enumerate(raw):
        if not isinstance(definition, dict):
            errors.append(
                ScenarioError(
                    str(path),
                    ["action_set_definitions", index],
                    f"expected an object, got {_kind(definition)}",
                )
            )
            continue
        name = _tool_name(_text(definition.get("name")), index, taken)
        taken.add(name)
        description = _text(definition.get("description"))
        schema, problem = _input_schema(definition.get("parameters"))
        if problem:
            description = (
                f"{description}\n\n(The source's parameter schema {problem}; any object is accepted.)".strip()
            )
        tool: dict[str, Any] = {"name": name, "description": description, "input_schema": schema}
        read_only = infer_read_only(name, description)
        if read_only is not None:
            tool.update(read_only=read_only, read_only_inferred=True)
        if "example_output" in definition:
            tool["example_output"] = definition["example_output"]
        tools.append(tool)
    return tools if len(tools) == len(raw) else None


def _tool_name(raw: str, index: int, taken: set[str]) -> str:
    name = _TOOL_NAME_CHARS.sub("_", raw.strip()).strip("_-") or f"tool_{index + 1}"
    if not (name[0].isalpha() or name[0] == "_"):
        name = f"_{name}"
    name = name[:64]
    unique, suffix = name, 2
    while unique in taken:
        unique = f"{name[: 64 - len(str(suffix)) - 1]}_{suffix}"
        suffix += 1
    return unique


def _input_schema(raw: Any) -> tuple[dict[str, Any], str | None]:
    """An object schema for the tool's arguments, and why the source's schema was replaced, if it was."""
    if isinstance(raw, str):
        raw = _json_or(raw, raw)
    if raw is None or raw == {}:
        return {"type": "object", "properties": {}}, None
    if not isinstance(raw, dict):
        return {"type": "object"}, f"was {_kind(raw)}, not an object"
    schema = raw
    if "type" not in schema:
        # A bare mapping of argument name -> schema is the properties of an object schema.
        looks_like_properties = all(isinstance(v, dict) for v in schema.values()) and not (
            set(schema)
            & {"properties", "required", "additionalProperties", "$schema", "anyOf", "oneOf", "allOf"}
        )
        schema = (
            {"type": "object", "properties": schema}
            if looks_like_properties
            else {"type": "object", **schema}
        )
    schema = _repair_schema(schema)
    if schema.get("type") != "object":
        return {
            "type": "object"
        }, f"describes {schema.get('type')!r} arguments, not an object of named arguments"
    problem = _schema_problem(json.dumps(schema, sort_keys=True))
    if problem is not None:
        return {"type": "object"}, f"was not valid JSON Schema ({problem})"
    return schema, None


@functools.lru_cache(maxsize=4096)
def _schema_problem(canonical: str) -> str | None:
    """Why the schema (canonical JSON) is not valid JSON Schema, or None. Checked once per distinct schema: a
    release's tasks often share their tools, and checking against the metaschema is the costly part of loading."""
    return schema_problem(json.loads(canonical))


def _repair_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Fix the common slips of generated schemas: type aliases (`float`) and per-property `required: true`."""
    fixed = dict(schema)
    kind = fixed.get("type")
    if isinstance(kind, str) and kind.lower() in _TYPE_ALIASES:
        fixed["type"] = _TYPE_ALIASES[kind.lower()]
    elif isinstance(kind, str) and kind.lower() == "any":
        del fixed["type"]
    properties = fixed.get("properties")
    if isinstance(properties, dict):
        required = list(fixed["required"]) if isinstance(fixed.get("required"), list) else []
        repaired: dict[str, Any] = {}
        for name, sub in properties.items():
            if isinstance(sub, dict):
                flag = sub.get("required")
                if isinstance(flag, bool):
                    sub = {k: v for k, v in sub.items() if k != "required"}
                    if flag and name not in required:
                        required.append(name)
                sub = _repair_schema(sub)
            repaired[name] = sub
        fixed["properties"] = repaired
        if required or "required" in fixed:
            fixed["required"] = required
    if isinstance(fixed.get("items"), dict):
        fixed["items"] = _repair_schema(fixed["items"])
    return fixed


def _state(raw: Any) -> dict[str, Any]:
    """The initial state as an object; any other JSON value is kept under a single `state` key."""
    if isinstance(raw, str):
        raw = _json_or(raw, raw)
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return {str(key): value for key, value in raw.items()}
    return {"state": raw}


def _descriptions(raw: Any, state: dict[str, Any]) -> dict[str, str]:
    """A description for every top-level state key; free text describes every key it does not name."""
    if isinstance(raw, str):
        raw = _json_or(raw, raw)
    described: dict[str, str] = {}
    fallback = NO_DESCRIPTION
    if isinstance(raw, dict):
        for key, value in raw.items():
            text = _text(value)
            if text.strip():
                described[str(key)] = text
    elif raw is not None and _text(raw).strip():
        fallback = _text(raw)
    for key in state:
        described.setdefault(key, fallback)
    return described


def _scenario_id(stem: str) -> str:
    ident = stem[4:] if stem.lower().startswith("env_") else stem
    slug = _SLUG_CHARS.sub("-", ident.lower()).strip("-_")
    return SCENARIO_PREFIX + (slug or "environment")


def _json_or(text: str, default: Any) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return default


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _name_key(name: str) -> str:
    return " ".join(name.split()).casefold()


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
