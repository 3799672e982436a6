"""Scenarios written as YAML read back equal, with long text as block scalars."""

from __future__ import annotations

import yaml

from occusim.environments import (
    dump_scenario,
    load_occubench,
    load_scenario_file,
    parse_scenario,
    write_scenario,
)


def test_imported_scenarios_round_trip(occubench_root, tmp_path):
    for scenario, _ in load_occubench(occubench_root):
        path = write_scenario(scenario, tmp_path / f"{scenario.id}.yaml", header="converted\nfor a test")
        assert load_scenario_file(path) == scenario
        text = path.read_text(encoding="utf-8")
        assert text.startswith("# converted\n# for a test\nid: occubench-")
        # Long prompts stay readable: one block scalar, never an escaped one-line string.
        assert "\nrules: |" in text
        assert "\nsimulator_prompt: |" in text if scenario.simulator_prompt else "\nsimulator_prompt: null" in text


def test_exact_text_survives_trailing_blanks_tabs_and_carriage_returns(scenario_data):
    data = scenario_data()
    data["rules"] = "Line with trailing blanks   \n\tIndented by a tab\n  leading spaces\n\nlast line"
    data["summary"] = "windows\r\nline ends"
    scenario = parse_scenario(data, "x")
    text = dump_scenario(scenario)
    assert "rules: |" in text
    assert parse_scenario(yaml.safe_load(text), "x") == scenario


def test_repeated_values_are_written_out_without_anchors(scenario_data):
    data = scenario_data()
    shared = {"type": "object", "properties": {"rx_id": {"type": "integer"}}}
    for tool in data["tools"]:
        tool["input_schema"] = shared
    data["tasks"][0]["reference_solution"][1]["arguments"] = {"rx_id": 101}
    text = dump_scenario(parse_scenario(data, "x"))
    assert "&id" not in text and "*id" not in text


def test_only_fields_the_file_sets_are_written(scenario_data):
    text = dump_scenario(parse_scenario(scenario_data(), "x"))
    document = yaml.safe_load(text)
    assert "scenario" not in document["tasks"][0]  # implied by the file that holds the task
    assert "state_schema" not in document and "simulator_prompt" not in document
    assert list(document)[:3] == ["id", "name", "category"]
