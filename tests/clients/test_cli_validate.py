"""`occusim validate`: every problem on its own line, a one-line summary, exit 1 on any problem."""

from __future__ import annotations

import os

from occusim.clients.cli import main


def test_a_sound_file_passes(scenario_data, write_scenario_yaml, capsys):
    path = write_scenario_yaml(scenario_data(), "refill.yaml")
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out == "ok: 1 scenario, 1 task, 0 errors\n"


def test_every_problem_is_listed_and_the_exit_status_is_one(
    scenario_data, write_scenario_yaml, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    data = scenario_data()
    data["tasks"][0]["reference_solution"][0]["arguments"] = {"rx_id": "P9"}
    data["tasks"][0]["rubric"]["items"][0]["checks"][0]["pointer"] = "/prescriptions/101/refils"
    write_scenario_yaml(data, "healthcare/refill.yaml")
    write_scenario_yaml("id: [\n", "healthcare/broken.yaml")
    assert main(["validate", "healthcare"]) == 1
    lines = capsys.readouterr().out.splitlines()
    broken, refill = os.path.join("healthcare", "broken.yaml"), os.path.join("healthcare", "refill.yaml")
    assert lines[0].startswith(f"{broken}: line 2, column 1: invalid YAML:")
    assert (
        lines[1] == f"{refill}: tasks[0].reference_solution[0].arguments.rx_id: 'P9' is not of type 'integer'"
    )
    assert lines[2].startswith(
        f"{refill}: tasks[0].rubric.items[0].checks[0].pointer: '/prescriptions/101/refils'"
    )
    assert lines[3] == "failed: 1 scenario, 1 task, 3 errors"
    assert len(lines) == 4


def test_paths_replace_the_bundled_catalog_unless_asked(scenario_data, write_scenario_yaml, capsys):
    path = write_scenario_yaml(scenario_data(), "refill.yaml")
    main(["validate", str(path), "--with-bundled"])
    combined = capsys.readouterr().out.splitlines()[-1]
    main(["validate"])
    bundled = capsys.readouterr().out.splitlines()[-1]
    scenarios = int(bundled.split(": ")[1].split(" ")[0])
    assert f"{scenarios + 1} scenario" in combined


def test_the_bundled_catalog_validates(capsys):
    code = main(["validate"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("ok: ")


def test_an_occubench_source_validates(occubench, capsys):
    assert main(["validate", "--source", f"occubench:{occubench.root}"]) == 0
    assert capsys.readouterr().out == f"ok: {occubench.scenarios} scenarios, {occubench.tasks} tasks, 0 errors\n"


def test_occubench_tasks_are_reported_as_not_gateable(occubench, tmp_path, capsys):
    import json

    out = tmp_path / "gates.json"
    code = main(["validate", "--source", f"occubench:{occubench.root}", "--discrimination", "--format", "json",
                 "--out", str(out)])
    report = json.loads(out.read_text(encoding="utf-8"))
    assert code == 0
    assert len(report["tasks"]) == occubench.tasks
    assert all(not task["gateable"] and "no reference solution" in task["reason"] for task in report["tasks"])
    assert f"0 tasks gated, 0 failing a gate, {occubench.tasks} not gateable" in capsys.readouterr().err
