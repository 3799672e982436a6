"""Each cross-field check of `validate_scenario`, fed a scenario that breaks it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from occusim.environments import Catalog, load_catalog, parse_scenario, validate_catalog, validate_scenario

SOURCE = "catalog/healthcare-life-sciences/example-refill-desk.yaml"


def _errors(data: dict[str, Any]) -> list[str]:
    return [str(error) for error in validate_scenario(parse_scenario(data, SOURCE), SOURCE)]


def _task(data: dict[str, Any]) -> dict[str, Any]:
    return data["tasks"][0]


def test_the_fixture_scenario_is_sound(scenario_data: Callable[[], dict[str, Any]]):
    assert _errors(scenario_data()) == []


def test_reference_arguments_are_checked_against_the_input_schema(scenario_data):
    data = scenario_data()
    _task(data)["reference_solution"][0]["arguments"] = {"rx_id": "P9"}
    assert _errors(data) == [
        f"{SOURCE}: tasks[0].reference_solution[0].arguments.rx_id: 'P9' is not of type 'integer'"
    ]


def test_every_schema_error_is_reported_with_its_path(scenario_data):
    data = scenario_data()
    _task(data)["reference_solution"][1]["arguments"] = {"quantity": 0, "extra": True}
    assert _errors(data) == [
        f"{SOURCE}: tasks[0].reference_solution[1].arguments: 'rx_id' is a required property",
        f"{SOURCE}: tasks[0].reference_solution[1].arguments.quantity: 0 is less than the minimum of 1",
    ]


def test_reference_observations_are_checked_against_the_output_schema(scenario_data):
    data = scenario_data()
    _task(data)["reference_solution"][1]["observation"] = {"status": "maybe"}
    assert _errors(data) == [
        f"{SOURCE}: tasks[0].reference_solution[1].observation.status: 'maybe' is not one of ['dispensed', 'refused']"
    ]


def test_reference_steps_must_name_a_tool(scenario_data):
    data = scenario_data()
    _task(data)["reference_solution"][0]["tool"] = "get_prescriptions"
    assert _errors(data) == [
        f"{SOURCE}: tasks[0].reference_solution[0].tool: unknown tool 'get_prescriptions' "
        "(the tools are: get_prescription, dispense); did you mean 'get_prescription'?"
    ]


def test_tool_schemas_must_be_valid_json_schema(scenario_data):
    data = scenario_data()
    data["tools"][0]["input_schema"]["properties"]["rx_id"]["type"] = "float"
    data["tools"][1]["output_schema"]["required"] = "status"
    errors = _errors(data)
    assert errors[0].startswith(
        f"{SOURCE}: tools[0].input_schema.properties.rx_id.type: invalid JSON Schema: 'float'"
    )
    assert (
        errors[1]
        == f"{SOURCE}: tools[1].output_schema.required: invalid JSON Schema: 'status' is not of type 'array'"
    )
    # A broken schema is reported once, not again for every step that uses it.
    assert len(errors) == 2


def test_input_schemas_must_describe_an_object(scenario_data):
    data = scenario_data()
    data["tools"][0]["input_schema"] = {"type": "string"}
    _task(data)["reference_solution"][0]["arguments"] = {}
    errors = _errors(data)
    assert errors[0] == (
        f"{SOURCE}: tools[0].input_schema.type: a tool's input_schema must have `type: object` "
        "(tools take named arguments)"
    )


def test_example_output_must_satisfy_the_output_schema(scenario_data):
    data = scenario_data()
    data["tools"][0]["example_output"]["refills_left"] = "two"
    assert _errors(data) == [
        f"{SOURCE}: tools[0].example_output.refills_left: 'two' is not of type 'integer'"
    ]


def test_reference_patches_must_apply_in_order(scenario_data):
    data = scenario_data()
    _task(data)["reference_solution"][1]["state_patch"] = [
        {"op": "replace", "path": "/prescriptions/101/refills_left", "value": 1},
        {"op": "remove", "path": "/prescriptions/102"},
    ]
    errors = _errors(data)
    assert len(errors) == 1
    assert errors[0].startswith(
        f'{SOURCE}: tasks[0].reference_solution[1].state_patch[1]: cannot apply {{"op": "remove", '
        '"path": "/prescriptions/102"} to the state after reference step 0:'
    )


def test_patches_start_from_the_task_initial_state(scenario_data):
    data = scenario_data()
    task = _task(data)
    task["initial_state_patch"] = {"prescriptions": {"102": {"drug": "metformin 500 mg", "refills_left": 0}}}
    task["reference_solution"][1]["state_patch"].append({"op": "remove", "path": "/prescriptions/102"})
    task["rubric"]["items"][0]["checks"].append({"pointer": "/prescriptions/102", "op": "absent"})
    assert _errors(data) == []
    task["rubric"]["items"][0]["checks"].append({"pointer": "/prescriptions/102/drug", "op": "exists"})
    assert _errors(data) == [
        f"{SOURCE}: tasks[0].rubric.items[0].checks[2].pointer: '/prescriptions/102/drug' does not resolve in "
        "the final reference state: /prescriptions has no key '102' (its keys: 101)"
    ]


def test_state_check_pointers_must_resolve_in_the_final_state(scenario_data):
    data = scenario_data()
    checks = _task(data)["rubric"]["items"][0]["checks"]
    checks.append({"pointer": "/prescriptions/101/refils_left", "op": "eq", "value": 1})
    checks.append({"pointer": "/prescriptions/101/drug/0", "op": "exists"})
    assert _errors(data) == [
        f"{SOURCE}: tasks[0].rubric.items[0].checks[1].pointer: '/prescriptions/101/refils_left' does not resolve "
        "in the final reference state: /prescriptions/101 has no key 'refils_left' (its keys: drug, "
        "refills_left); did you mean 'refills_left'?",
        f"{SOURCE}: tasks[0].rubric.items[0].checks[2].pointer: '/prescriptions/101/drug/0' does not resolve "
        "in the final reference state: /prescriptions/101/drug is a string, not an object or list",
    ]


def test_tool_call_checks_must_name_tools(scenario_data):
    data = scenario_data()
    _task(data)["rubric"]["items"][1]["checks"] = [
        {"tool": "refill", "after": "get_prescription", "before": "ship"}
    ]
    assert _errors(data) == [
        f"{SOURCE}: tasks[0].rubric.items[1].checks[0].tool: unknown tool 'refill' "
        "(the tools are: get_prescription, dispense)",
        f"{SOURCE}: tasks[0].rubric.items[1].checks[0].before: unknown tool 'ship' "
        "(the tools are: get_prescription, dispense)",
    ]


def test_every_top_level_state_key_needs_a_description(scenario_data):
    data = scenario_data()
    data["initial_state"]["pharmacist_on_duty"] = "R. Osei"
    _task(data)["initial_state_patch"] = {"queue": ["walk-in"]}
    assert _errors(data) == [
        f"{SOURCE}: state_descriptions: top-level state key 'pharmacist_on_duty' has no description; "
        "add `pharmacist_on_duty: <what it holds>` under state_descriptions",
        f"{SOURCE}: tasks[0].initial_state_patch: top-level state key 'queue' has no description; "
        "add `queue: <what it holds>` under state_descriptions",
    ]


def test_state_schema_must_be_valid_and_satisfied(scenario_data):
    data = scenario_data()
    data["state_schema"] = {"type": "object", "required": ["prescriptions", "audit_log"]}
    assert _errors(data) == [
        f"{SOURCE}: initial_state: the initial state does not satisfy state_schema at /: "
        "'audit_log' is a required property"
    ]
    data["state_schema"] = {"type": "dictionary"}
    assert _errors(data)[0].startswith(f"{SOURCE}: state_schema.type: invalid JSON Schema:")
    data["state_schema"] = {
        "type": "object",
        "properties": {
            "prescriptions": {"additionalProperties": {"properties": {"refills_left": {"minimum": 2}}}}
        },
    }
    assert _errors(data) == [
        f"{SOURCE}: tasks[0].reference_solution[1].state_patch: the state after this step does not satisfy "
        "state_schema at /prescriptions/101/refills_left: 1 is less than the minimum of 2"
    ]
    data["state_schema"]["properties"]["prescriptions"]["additionalProperties"]["properties"][
        "refills_left"
    ] = {"minimum": 0}
    assert _errors(data) == []


def test_exemplars_must_name_rubric_items(scenario_data):
    data = scenario_data()
    _task(data)["rubric"]["exemplars"] = [
        {"item_id": "refill-count", "excerpt": "dispense(...)", "passed": True}
    ]
    assert _errors(data) == [
        f"{SOURCE}: tasks[0].rubric.exemplars[0].item_id: no rubric item 'refill-count' "
        "(the items are: refill-counted, read-first); did you mean 'refill-counted'?"
    ]


def test_catalog_rejects_a_task_id_used_twice_in_one_scenario(scenario_data):
    data = scenario_data()
    data["tasks"].append(data["tasks"][0])
    errors = Catalog().add(parse_scenario(data, SOURCE), SOURCE)
    assert [str(e) for e in errors] == [
        f"{SOURCE}: tasks[1].id: task id 'example-refill-desk/one-refill' is already used by tasks[0]"
    ]


def test_validate_catalog_names_each_scenario_by_its_origin(scenario_data):
    catalog = Catalog()
    data = scenario_data()
    data["tasks"][0]["reference_solution"][0]["tool"] = "nope"
    catalog.add(parse_scenario(data, "a.yaml"), "a.yaml")
    assert [e.source for e in validate_catalog(catalog)] == ["a.yaml"]


def test_a_bundled_file_named_again_is_not_a_clash():
    from occusim.environments import BUNDLED_CATALOG, validate_sources

    one_file = next(BUNDLED_CATALOG.rglob("*.yaml"))
    report = validate_sources([one_file], bundled=True)
    assert report.ok, [str(e) for e in report.errors]


def test_a_read_only_tool_may_not_change_the_state_in_a_reference_step(scenario_data):
    data = scenario_data()
    data["tools"][1]["read_only"] = True
    assert _errors(data) == [
        f"{SOURCE}: tasks[0].reference_solution[1].state_patch: dispense is declared read_only, yet this "
        "reference step changes the state; set read_only: false (and list the paths in writes) or empty the patch"
    ]


def test_reference_patches_stay_within_the_paths_a_tool_writes(scenario_data):
    data = scenario_data()
    data["initial_state"]["log"] = []
    data["state_descriptions"]["log"] = "Dispensing log."
    data["tools"][1]["writes"] = ["/log"]
    assert _errors(data) == [
        f"{SOURCE}: tasks[0].reference_solution[1].state_patch[0].path: '/prescriptions/101/refills_left' is "
        "outside the paths dispense declares in writes (/log); add it there or change the patch"
    ]


def test_declared_writes_name_state_keys_and_never_come_with_read_only(scenario_data):
    data = scenario_data()
    data["tools"][0].update(read_only=True, writes=["/prescriptions"])
    data["tools"][1]["writes"] = ["/prescription", "prescriptions"]
    assert _errors(data) == [
        f"{SOURCE}: tools[0].writes: get_prescription is read_only, so it cannot declare paths it writes",
        f"{SOURCE}: tools[1].writes[0]: '/prescription' names no top-level state key (the state keys are: "
        "prescriptions)",
        f"{SOURCE}: tools[1].writes[1]: 'prescriptions' is not a JSON Pointer (it must start with /)",
        f"{SOURCE}: tasks[0].reference_solution[1].state_patch[0].path: '/prescriptions/101/refills_left' is "
        "outside the paths dispense declares in writes (/prescription, prescriptions); add it there or change "
        "the patch",
    ]


def test_every_bundled_tool_declares_whether_and_where_it_writes():
    tools = [(scenario.id, tool) for scenario in load_catalog().scenarios.values() for tool in scenario.tools]
    undeclared = [f"{sid}/{tool.name}" for sid, tool in tools
                  if tool.read_only is None or (tool.read_only is False and not tool.writes)]
    assert not undeclared, f"declare read_only (and writes for tools that change the state): {undeclared}"
    assert not any(tool.read_only_inferred for _, tool in tools)
