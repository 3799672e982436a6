"""The committed scenario-file JSON Schema is the one generated from the models, and it accepts real files."""

from __future__ import annotations

import json
import subprocess
import sys

from jsonschema import Draft202012Validator

from occusim.environments import SCENARIO_SCHEMA_PATH, load_occubench, scenario_json_schema
from occusim.environments._yaml import scenario_document


def test_committed_schema_equals_the_generated_one():
    committed = json.loads(SCENARIO_SCHEMA_PATH.read_text(encoding="utf-8"))
    assert committed == scenario_json_schema()
    assert committed["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert committed["title"] == "occusim scenario file"
    Draft202012Validator.check_schema(committed)


def test_the_module_regenerates_and_checks_the_file(tmp_path):
    out = tmp_path / "scenario.schema.json"
    command = [sys.executable, "-m", "occusim.environments._schema", "--out", str(out)]
    assert subprocess.run([*command, "--check"], capture_output=True).returncode == 1
    assert subprocess.run(command, capture_output=True).returncode == 0
    assert json.loads(out.read_text(encoding="utf-8")) == scenario_json_schema()
    checked = subprocess.run([*command, "--check"], capture_output=True, text=True)
    assert checked.returncode == 0 and "up to date" in checked.stdout


def test_scenario_files_satisfy_the_schema_and_typos_do_not(scenario_data, occubench_root):
    validator = Draft202012Validator(scenario_json_schema())
    assert list(validator.iter_errors(scenario_data())) == []
    scenario, _ = load_occubench(occubench_root)[0]
    assert list(validator.iter_errors(scenario_document(scenario))) == []
    data = scenario_data()
    data["tasks"][0]["dificulty"] = 2
    assert [e.message for e in validator.iter_errors(data)] == [
        "Additional properties are not allowed ('dificulty' was unexpected)"
    ]
