"""Broken scenario files give `file: json.path: message` errors, and one bad file hides nothing else."""

from __future__ import annotations

import os

import pytest

from occusim.environments import ScenarioErrors, load_catalog, load_scenario_file, validate_sources


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    # Paths are shown relative to the working directory, as a user would type them.
    monkeypatch.chdir(tmp_path)


def _messages(*sources) -> list[str]:
    return [str(error) for error in validate_sources(list(sources)).errors]


def test_invalid_yaml_names_line_and_column(write_scenario_yaml):
    write_scenario_yaml("id: example-refill-desk\nname: [unclosed\ntools: 1\n", "broken.yaml")
    [message] = _messages("broken.yaml")
    assert message.startswith("broken.yaml: line 3, column 6: invalid YAML: ")


def test_a_wrong_type_names_the_json_path(scenario_data, write_scenario_yaml):
    data = scenario_data()
    data["tasks"][0]["reference_solution"][1]["arguments"] = ["P9"]
    data["tasks"][0]["max_steps"] = "many"
    write_scenario_yaml(data, "healthcare/refill.yaml")
    assert _messages("healthcare") == [
        f"{os.path.join('healthcare', 'refill.yaml')}: tasks[0].reference_solution[1].arguments: "
        "Input should be a valid dictionary",
        f"{os.path.join('healthcare', 'refill.yaml')}: tasks[0].max_steps: "
        "Input should be a valid integer, unable to parse string as an integer (got 'many')",
    ]


def test_an_unknown_field_is_named(scenario_data, write_scenario_yaml):
    data = scenario_data()
    data["tasks"][0]["rubric"]["items"][0]["checks"][0]["operator"] = "eq"
    write_scenario_yaml(data, "refill.yaml")
    assert _messages("refill.yaml") == [
        "refill.yaml: tasks[0].rubric.items[0].checks[0].operator: unknown field "
        "(check its spelling against the format's JSON Schema)"
    ]


def test_a_model_rule_reads_without_pydantic_prefixes(scenario_data, write_scenario_yaml):
    data = scenario_data()
    del data["tasks"][0]["rubric"]
    write_scenario_yaml(data, "refill.yaml")
    assert _messages("refill.yaml") == [
        "refill.yaml: tasks[0]: a task needs rubric items, a verification_plan, or both"
    ]


def test_duplicate_ids_across_files_name_both_files(scenario_data, write_scenario_yaml):
    first = scenario_data()
    write_scenario_yaml(first, "a/refill.yaml")
    write_scenario_yaml(first, "b/refill-copy.yaml")
    other = scenario_data()
    other["id"] = "example-refill-desk-night"
    write_scenario_yaml(other, "b/refill-night.yaml")
    a, b_copy, b_night = (
        os.path.join(*p)
        for p in (("a", "refill.yaml"), ("b", "refill-copy.yaml"), ("b", "refill-night.yaml"))
    )
    assert _messages("a", "b") == [
        f"{b_copy}: id: scenario id 'example-refill-desk' is already defined in {a}",
        f"{b_night}: tasks[0].id: task id 'example-refill-desk/one-refill' is already defined in {a}",
    ]
    with pytest.raises(ScenarioErrors):
        load_catalog(["a", "b"], bundled=False)


def test_a_broken_file_does_not_hide_problems_in_its_neighbours(scenario_data, write_scenario_yaml):
    write_scenario_yaml("just a string\n", "folder/broken.yaml")
    data = scenario_data()
    data["tasks"][0]["reference_solution"][0]["tool"] = "missing_tool"
    write_scenario_yaml(data, "folder/refill.yaml")
    report = validate_sources(["folder"])
    messages = [str(e) for e in report.errors]
    assert (
        messages[0]
        == f"{os.path.join('folder', 'broken.yaml')}: expected a mapping at the top level, got str"
    )
    assert messages[1].startswith(
        f"{os.path.join('folder', 'refill.yaml')}: tasks[0].reference_solution[0].tool: unknown tool"
    )
    assert report.summary() == "failed: 1 scenario, 1 task, 2 errors"


def test_a_sound_file_loads_and_validates(scenario_data, write_scenario_yaml):
    path = write_scenario_yaml(scenario_data(), "refill.yaml")
    assert load_scenario_file(path).tasks[0].scenario == "example-refill-desk"
    report = validate_sources([path])
    assert report.ok and report.summary() == "ok: 1 scenario, 1 task, 0 errors"


def test_missing_sources_are_reported():
    assert _messages("nowhere") == ["nowhere: no such file or folder"]
