"""The OccuBench importer on OccuBench-format releases (the small one under tests/fixtures and the real
sample when present) and on odd, hand-made releases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from occusim.environments import (
    CATEGORIES,
    Scenario,
    ScenarioErrors,
    category_slug,
    load_occubench,
    load_source,
    validate_scenario,
)
from occusim.environments._occubench import GENERIC_RULES, NO_DESCRIPTION, rules_from_prompt, unescape_braces
from occusim.environments._read_only_inference import infer_read_only

MINI_OCCUBENCH = Path(__file__).resolve().parents[1] / "fixtures" / "occubench_mini"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8-sig")
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def _name_key(name: str) -> str:
    return " ".join(name.split()).casefold()


@pytest.fixture
def release(occubench_root) -> list[tuple[Scenario, str]]:
    return load_occubench(occubench_root)


def test_every_task_loads_with_its_fields(release, occubench):
    rows = _jsonl(occubench.root / "eval_benchmark_solvable.jsonl")
    tasks = {task.id: (scenario, task) for scenario, _ in release for task in scenario.tasks}
    assert len(rows) == len(tasks) == occubench.tasks
    assert len(release) == occubench.scenarios
    for row in rows:
        scenario, task = tasks[f"occubench/{str(row['task_id']).lower()}"]
        assert scenario.id == "occubench-" + row["env_name"].removeprefix("env_")
        assert task.instruction == row["agent_instruction"]
        assert task.difficulty == int(float(row["difficulty_level"]))
        plan = row["verification_plan"]
        assert task.verification_plan == ("\n".join(plan) if isinstance(plan, list) else plan)
        assert _name_key(task.title) == _name_key(row["task_scenario_name"])
        assert task.rubric.items == [] and task.reference_solution == []
        assert task.max_steps == 30


def test_category_and_domain_come_from_the_pool(release, occubench):
    pool = {_name_key(row["task_scenario_name"]): row for row in _jsonl(occubench.root / "task_scenario_all_pool.jsonl")}
    categories = set()
    for scenario, _ in release:
        row = pool[_name_key(scenario.tasks[0].title)]
        assert category_slug(scenario.category) == category_slug(row["category"])
        assert scenario.category in CATEGORIES and scenario.domain == row["domain"]
        assert scenario.occupation.startswith(f"{row['domain']} professional (")
        categories.add(category_slug(scenario.category))
    assert categories == occubench.categories


def test_tools_state_and_descriptions_are_carried_over(release):
    for scenario, origin in release:
        assert origin.startswith("occubench:") and origin.endswith(".json")
        config = json.loads(Path(origin.removeprefix("occubench:")).read_text(encoding="utf-8"))
        state = config["task_initial_state"]
        state = json.loads(state) if isinstance(state, str) else state
        assert scenario.initial_state == state
        described = config["state_description"]
        assert scenario.state_descriptions == (dict.fromkeys(state, described) if isinstance(described, str)
                                               else described)
        assert [t.name for t in scenario.tools] == [d["name"] for d in config["action_set_definitions"]]
        for tool, definition in zip(scenario.tools, config["action_set_definitions"], strict=True):
            assert tool.description == definition["description"]
            assert tool.input_schema == definition["parameters"]
            assert tool.example_output == definition.get("example_output")


def test_rules_drop_the_rendered_tail_and_the_prompt_stays_verbatim(release):
    for scenario, origin in release:
        config = json.loads(Path(origin.removeprefix("occubench:")).read_text(encoding="utf-8"))
        prompt = config.get("world_model_system_prompt")
        assert scenario.simulator_prompt == prompt
        if prompt is None:
            assert scenario.rules == GENERIC_RULES
            continue
        rules = scenario.rules
        for marker in (
            "{{initial_state}}:",
            "{initial_state}:",
            "{{state_descriptions}}:",
            "{action_set_definitions}:",
        ):
            assert marker not in rules
        assert "{{" not in rules and "}}" not in rules
        if "\n{{initial_state}}:" in prompt:
            head = prompt[: prompt.rindex("\n{{initial_state}}:")]
            assert rules == head.strip().replace("{{", "{").replace("}}", "}")


def test_scenarios_pass_every_validation_check(release):
    for scenario, origin in release:
        assert validate_scenario(scenario, origin) == []


def test_load_source_reads_the_occubench_prefix(occubench):
    loaded = load_source(f"occubench:{occubench.root}")
    assert len(loaded) == occubench.scenarios
    assert all(
        origin.startswith(f"occubench:{occubench.root}/world_model_configs/env_") for _, origin in loaded
    )


def test_the_sample_holds_64_tasks_in_ten_categories(occubench_sample):
    loaded = load_occubench(occubench_sample.root)
    assert sum(len(scenario.tasks) for scenario, _ in loaded) == 64
    assert len({scenario.category for scenario, _ in loaded}) == 10


def test_the_small_release_repairs_what_generated_text_gets_wrong():
    loaded = {scenario.id: scenario for scenario, _ in load_occubench(MINI_OCCUBENCH)}
    # A config that no task names is not read, though it would not load.
    assert set(loaded) == {"occubench-a1c0ffee0001", "occubench-b2d4e6f8a0b2", "occubench-c3e5a7b9c1d3",
                           "occubench-d4f6b8c0d2e4"}
    kennel = loaded["occubench-a1c0ffee0001"]
    assert [task.id for task in kennel.tasks] == ["occubench/101", "occubench/102"]
    assert kennel.rules.startswith("# Kennel medication round simulator\n")
    assert 'refused with {"error": "already given today"}.' in kennel.rules
    assert kennel.rules.endswith("answer with a JSON object only.")
    assert kennel.occupation == "Veterinary Medicine professional (kennel medication round)"

    rail = loaded["occubench-b2d4e6f8a0b2"]
    # Named without `env_` in the tasks file, its scenario name in other case and spacing.
    assert rail.name == "wagon load  balancing (env_b2d4e6f8a0b2)"
    assert (rail.category, rail.domain) == ("Transportation & Logistics", "Rail Freight")
    (task,) = rail.tasks
    assert (task.id, task.difficulty) == ("occubench/rf-7", 2)
    assert task.verification_plan == (
        "Check that the agent listed the wagons first.\n"
        "Check that W-32 ends at or below 22.5 t and W-31 stays at or below 22.5 t."
    )
    # Literal JSON braces stay as written; the tail starts at the single-brace `{initial_state}:`.
    assert rail.rules == (
        "You simulate a freight yard's loading system.\nA move that would put a wagon above max_t fails with "
        '{"error": "overload"}; a successful move answers {"moved": true}.\nThe state and the tools follow.'
    )
    assert rail.tools[1].example_output is None

    nursery = loaded["occubench-c3e5a7b9c1d3"]
    assert nursery.category == "Agriculture & Environment"  # the pool names it by its slug
    assert nursery.simulator_prompt is None and nursery.rules == GENERIC_RULES
    assert nursery.initial_state["beds"]["B1"] == {"species": "Douglas fir", "soil_moisture_pct": 18}
    assert set(nursery.state_descriptions) == {"beds", "valves"}
    assert nursery.tasks[0].difficulty == 2

    scope = loaded["occubench-d4f6b8c0d2e4"]
    # A line separator inside a JSON string does not end the row.
    assert "\u2028Start NGC 7000 first" in scope.tasks[0].instruction
    assert scope.rules.startswith("You are the observatory's scheduling backend. Slots may not overlap")
    assert scope.tasks[0].verification_plan.endswith("(é ok).")


def test_unescape_braces_only_touches_escaped_templates():
    assert unescape_braces('Return {{"error": "why"}} for o_{{t+1}}') == 'Return {"error": "why"} for o_{t+1}'
    assert unescape_braces('{{"a": {{"b": 1}}}}') == '{"a": {"b": 1}}'
    literal = 'Return {"a": {"b": 1}} as is'
    assert unescape_braces(literal) == literal


def _as_format_reads(text: str) -> str:
    # str.format with no arguments undoes the escapes, and raises on any lone brace (or replacement field).
    try:
        return text.format()
    except (ValueError, IndexError, KeyError):
        return text


@given(st.text(alphabet="{}a\n", max_size=40))
def test_unescape_braces_reads_pairs_as_str_format_does(text: str):
    assert unescape_braces(text) == _as_format_reads(text)


def test_rules_cut_at_the_last_rendered_state_block():
    prompt = (
        "Rules line.\n{{initial_state}}: mentioned in the rules\nMore rules.\n{{initial_state}}: {{\n}}\n"
    )
    assert rules_from_prompt(prompt) == "Rules line.\n{initial_state}: mentioned in the rules\nMore rules."


# --- hand-made releases with the shapes a generated release can take ---------------------------------


def _release(root: Path, tasks: list[Any], configs: dict[str, Any], pool: list[Any] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    pool = pool or [
        {
            "category": "Science & Research",
            "domain": "Meteorology",
            "task_scenario_name": "Weather Balloon Launch",
        },
        {
            "category": "agriculture-environment",
            "domain": "Beekeeping",
            "task_scenario_name": "Hive Inspection",
        },
    ]
    lines = [row if isinstance(row, str) else json.dumps(row) for row in tasks]
    (root / "eval_benchmark_solvable.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "task_scenario_all_pool.jsonl").write_text(
        "\n".join(json.dumps(r) for r in pool) + "\n", encoding="utf-8"
    )
    folder = root / "world_model_configs"
    folder.mkdir(exist_ok=True)
    for name, config in configs.items():
        text = config if isinstance(config, str) else json.dumps(config)
        (folder / f"{name}.json").write_text(text, encoding="utf-8")
    return root


def _task_row(
    task_id: Any, env: str, scenario: str = "Weather Balloon Launch", **extra: Any
) -> dict[str, Any]:
    row = {
        "task_id": task_id,
        "difficulty_level": 1,
        "task_scenario_name": scenario,
        "agent_instruction": "Launch the balloon once the surface wind is below 15 kt and report the launch time.",
        "env_name": env,
        "verification_plan": "Check the launch happened only after a wind reading below 15 kt.",
    }
    row.update(extra)
    return row


def test_odd_shapes_are_repaired_into_valid_scenarios(tmp_path):
    configs = {
        # A state that is a JSON string of a list, no descriptions, no prompt, no parameters.
        "env_list_state": {
            "environment_name": "env_list_state",
            "action_set_definitions": [
                {"name": "read wind", "description": "Surface wind.", "parameters": None}
            ],
            "task_initial_state": json.dumps([{"station": "KXYZ", "wind_kt": 12}]),
        },
        # Tools as a mapping, sloppy schemas, free-text descriptions, descriptions as non-strings.
        "env_sloppy": {
            "environment_name": "env_sloppy",
            "world_model_system_prompt": 'Simulate a hive.\n{{initial_state}}: {{"frames": 10}}\n',
            "action_set_definitions": {
                "inspect_frame": {
                    "description": "Inspect one frame.",
                    "parameters": {"frame": {"type": "int", "required": True}, "note": {"type": "str"}},
                },
                "log": {
                    "description": "Log a note.",
                    "parameters": {"type": "object", "properties": {"x": {"type": 7}}},
                },
                "log ": {"description": "Same name once cleaned.", "parameters": {"type": "array"}},
            },
            "state_description": "Frames in the hive and the queen's status.",
            "task_initial_state": {"frames": 10, "queen": {"seen": False}},
        },
        "env_partial_descriptions": {
            "action_set_definitions": [
                {"name": "launch", "parameters": {"type": "object", "properties": {}}}
            ],
            "state_description": {"balloon": {"unit": "g"}, "crew": ""},
            "task_initial_state": {"balloon": 600, "crew": 2, "site": "pad B"},
        },
    }
    tasks = [
        _task_row(1, "env_list_state", verification_plan=["Read the wind.", "Launch below 15 kt."]),
        _task_row(
            "B-2", "env_sloppy", scenario="hive  inspection", difficulty_level="3", verification_plan=""
        ),
        _task_row(3, "partial_descriptions", difficulty_level=5.0),
    ]
    root = _release(tmp_path / "release", tasks, configs)
    loaded = {scenario.id: scenario for scenario, _ in load_occubench(root)}
    assert set(loaded) == {"occubench-list_state", "occubench-sloppy", "occubench-partial_descriptions"}
    for scenario in loaded.values():
        assert validate_scenario(scenario, scenario.id) == []

    listed = loaded["occubench-list_state"]
    assert listed.initial_state == {"state": [{"station": "KXYZ", "wind_kt": 12}]}
    assert listed.state_descriptions == {"state": NO_DESCRIPTION}
    assert listed.simulator_prompt is None and listed.rules
    assert listed.tools[0].name == "read_wind"
    assert listed.tools[0].input_schema == {"type": "object", "properties": {}}
    assert listed.tasks[0].verification_plan == "Read the wind.\nLaunch below 15 kt."

    sloppy = loaded["occubench-sloppy"]
    assert sloppy.category == "Agriculture & Environment" and sloppy.domain == "Beekeeping"
    assert sloppy.rules == "Simulate a hive."
    assert [t.name for t in sloppy.tools] == ["inspect_frame", "log", "log_2"]
    assert sloppy.tools[0].input_schema == {
        "type": "object",
        "properties": {"frame": {"type": "integer"}, "note": {"type": "string"}},
        "required": ["frame"],
    }
    assert sloppy.tools[1].input_schema == {"type": "object"}
    assert "not valid JSON Schema" in sloppy.tools[1].description
    assert "not an object" in sloppy.tools[2].description
    assert sloppy.state_descriptions == dict.fromkeys(
        ["frames", "queen"], "Frames in the hive and the queen's status."
    )
    task = sloppy.tasks[0]
    assert (task.id, task.difficulty) == ("occubench/b-2", 3)
    assert task.verification_plan.startswith("(no verification plan in the source)")

    partial = loaded["occubench-partial_descriptions"]
    assert partial.state_descriptions == {
        "balloon": '{"unit": "g"}',
        "crew": NO_DESCRIPTION,
        "site": NO_DESCRIPTION,
    }
    assert partial.tasks[0].difficulty == 3


def test_rows_that_cannot_be_read_are_reported_with_file_and_line(tmp_path):
    config = {"action_set_definitions": [{"name": "launch"}], "task_initial_state": {"balloon": 600}}
    tasks = [
        _task_row(1, "env_ok"),
        "{not json",
        _task_row(3, "env_missing"),
        _task_row(4, "env_ok", scenario="Unknown Scenario"),
        _task_row(5, "env_ok", difficulty_level="hard"),
        json.dumps([1, 2]),
        {"task_id": 7, "env_name": "env_ok"},
        _task_row(8, "env_broken"),
    ]
    pool = [
        {
            "category": "Science & Research",
            "domain": "Meteorology",
            "task_scenario_name": "Weather Balloon Launch",
        },
        {"category": "Space Industry", "domain": "Orbits", "task_scenario_name": "Orbit Raise"},
    ]
    root = _release(tmp_path / "release", tasks, {"env_ok": config, "env_broken": '{"a": 1,\n "b": }'}, pool)
    with pytest.raises(ScenarioErrors) as caught:
        load_occubench(root)
    messages = [str(error) for error in caught.value.errors]
    tasks_file = f"{root}/eval_benchmark_solvable.jsonl"
    assert (
        f"{root}/task_scenario_all_pool.jsonl: line 2: category 'Space Industry' is not one of" in messages[0]
    )
    expected = [
        f"{tasks_file}: line 2: invalid JSON: Expecting property name enclosed in double quotes (column 2)",
        f"{tasks_file}: line 4: task_scenario_name 'Unknown Scenario' has no row in task_scenario_all_pool.jsonl",
        f"{tasks_file}: line 6: expected a JSON object, got list",
        f"{tasks_file}: line 7: missing `agent_instruction`",
        f"{tasks_file}: line 3: env_name 'env_missing' has no world_model_configs/env_missing.json",
        f"{tasks_file}: line 5: difficulty_level 'hard' is not a number from 1 to 3",
        f"{root}/world_model_configs/env_broken.json: line 2, column 7: invalid JSON: Expecting value",
    ]
    for line in expected:
        assert any(message.startswith(line) for message in messages), (line, messages)
    assert len(messages) == len(expected) + 1


def test_a_missing_release_folder_says_what_is_expected(tmp_path):
    with pytest.raises(ScenarioErrors) as caught:
        load_occubench(tmp_path / "nowhere")
    assert "expected an OccuBench release holding eval_benchmark_solvable.jsonl" in str(caught.value)


def test_imported_tools_are_read_only_by_their_verb_and_marked_inferred():
    tools = {tool.name: tool for scenario, _ in load_occubench(MINI_OCCUBENCH) for tool in scenario.tools}
    assert {name: tool.read_only for name, tool in tools.items()} == {
        "list_targets": True, "book_slot": False, "read_moisture": True, "open_valve": False,
        "read_kennel_card": True, "give_dose": False, "list_wagons": True, "move_pallet": False,
    }
    assert all(tool.read_only_inferred and tool.writes is None for tool in tools.values())


def test_most_tools_of_the_sample_get_an_inferred_declaration(occubench_sample):
    tools = [tool for scenario, _ in load_occubench(occubench_sample.root) for tool in scenario.tools]
    declared = [tool for tool in tools if tool.read_only is not None]
    assert len(declared) >= 0.8 * len(tools)
    assert all(tool.read_only_inferred for tool in declared)


@pytest.mark.parametrize(("name", "description", "expected"), [
    ("getPatientRecord", "", True),
    ("forecast_demand", "Returns the demand forecast for a product.", True),
    ("forecast_demand", "Creates a forecast run.", False),
    ("stabilize_patient", "Stabilizes the patient.", None),
])
def test_the_verb_of_the_name_decides_then_the_description(name, description, expected):
    assert infer_read_only(name, description) is expected
