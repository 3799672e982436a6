"""`occusim list`: rich tables of scenarios and tasks, filtered by category name or slug."""

from __future__ import annotations

import os
import subprocess
import sys

from occusim.clients.cli import main


def _list(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "occusim", "list", *args], capture_output=True, text=True, env=env
    )


def test_lists_scenarios_and_tasks_of_a_source(scenario_data, write_scenario_yaml):
    path = write_scenario_yaml(scenario_data(), "refill.yaml")
    done = _list("--source", str(path), "--no-bundled", "--tasks")
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if "example-refill-desk" in line]
    assert "Healthcare & Life Sciences" in rows[0] and "Pharmacy technician" in rows[0]
    assert rows[0].split("│")[-3:-1] == ["     2 ", "     1 "]
    assert "example-refill-desk/one-refill" in rows[1] and "Dispense one refill" in rows[1]


def test_category_accepts_name_or_slug(scenario_data, write_scenario_yaml, occubench, capsys):
    path = write_scenario_yaml(scenario_data(), "refill.yaml")
    source = ["--source", str(path), "--source", f"occubench:{occubench.root}", "--no-bundled"]
    for category in ("Healthcare & Life Sciences", "healthcare-life-sciences"):
        assert main(["list", "--category", category, *source]) == 0
        out = capsys.readouterr().out
        assert "example-refill-desk" in out and all(scenario in out for scenario in occubench.healthcare)
        assert occubench.elsewhere not in out
        scenarios, tasks = len(occubench.healthcare) + 1, occubench.healthcare_tasks + 1
        assert f"{scenarios} scenarios, {tasks} tasks" in out


def test_an_unknown_category_lists_the_slugs(capsys):
    assert main(["list", "--category", "medicine", "--no-bundled"]) == 2
    assert "choose from: business-enterprise, technology-it" in capsys.readouterr().err


def test_load_problems_are_printed_instead_of_a_table(write_scenario_yaml, capsys):
    path = write_scenario_yaml("id: [\n", "broken.yaml")
    assert main(["list", "--source", str(path), "--no-bundled"]) == 1
    assert "invalid YAML" in capsys.readouterr().err


def test_listing_does_not_import_litellm(scenario_data, write_scenario_yaml):
    path = write_scenario_yaml(scenario_data(), "refill.yaml")
    code = (
        "import sys; from occusim.clients.cli import main; "
        f"assert main(['list', '--source', {str(path)!r}, '--tasks']) == 0; "
        "print('litellm' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("False")
