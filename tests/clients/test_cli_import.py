"""`occusim import occubench`: YAML files that pass `occusim validate`, never overwritten by accident."""

from __future__ import annotations

import json
import subprocess
import sys

from occusim.clients.cli import main


def _occusim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "occusim", *args], capture_output=True, text=True)


def test_import_then_validate_round_trip(occubench, tmp_path):
    out = tmp_path / "imported"
    done = _occusim("import", "occubench", str(occubench.root), "--out", str(out))
    assert done.returncode == 0, done.stderr
    summary = f"imported {occubench.tasks} tasks in {occubench.scenarios} scenarios from {occubench.root} into {out}"
    assert summary in done.stdout
    files = sorted(out.rglob("*.yaml"))
    assert len(files) == occubench.scenarios
    assert {f.parent.name for f in files} == occubench.categories
    assert {f.stem for f in files if f.parent.name == "healthcare-life-sciences"} == occubench.healthcare
    checked = _occusim("validate", str(out))
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout == f"ok: {occubench.scenarios} scenarios, {occubench.tasks} tasks, 0 errors\n"


def test_existing_files_are_kept_unless_forced(occubench, tmp_path, capsys):
    out = tmp_path / "imported"
    assert main(["import", "occubench", str(occubench.root), "--out", str(out)]) == 0
    (target,) = out.rglob(f"{occubench.elsewhere}.yaml")
    target.write_text("edited by hand\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["import", "occubench", str(occubench.root), "--out", str(out)]) == 1
    assert f"{occubench.scenarios} of {occubench.scenarios} files already exist" in capsys.readouterr().err
    assert target.read_text(encoding="utf-8") == "edited by hand\n"
    assert main(["import", "occubench", str(occubench.root), "--out", str(out), "--force"]) == 0
    assert target.read_text(encoding="utf-8").startswith("# Converted from the OccuBench release")


def test_a_broken_release_writes_nothing_and_names_file_and_line(tmp_path, capsys):
    release = tmp_path / "release"
    (release / "world_model_configs").mkdir(parents=True)
    (release / "task_scenario_all_pool.jsonl").write_text(
        json.dumps(
            {"category": "Science & Research", "domain": "Geology", "task_scenario_name": "Core Logging"}
        )
        + "\n"
    )
    (release / "eval_benchmark_solvable.jsonl").write_text("{broken\n")
    out = tmp_path / "out"
    assert main(["import", "occubench", str(release), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{release}/eval_benchmark_solvable.jsonl: line 1: invalid JSON" in err
    assert "nothing written" in err
    assert not out.exists()
