"""`occusim import occubench`: YAML files that pass `occusim validate`, never overwritten by accident."""

from __future__ import annotations

import json
import subprocess
import sys

from occusim.clients.cli import main


def _occusim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "occusim", *args], capture_output=True, text=True)


def test_import_then_validate_round_trip(occubench_root, tmp_path):
    out = tmp_path / "imported"
    done = _occusim("import", "occubench", str(occubench_root), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert f"imported 64 tasks in 64 scenarios from {occubench_root} into {out}" in done.stdout
    files = sorted(out.rglob("*.yaml"))
    assert len(files) == 64
    assert {f.parent.name for f in files} == {
        "business-enterprise", "technology-it", "industrial-engineering", "transportation-logistics",
        "commerce-consumer", "education-culture", "healthcare-life-sciences", "public-service-governance",
        "agriculture-environment", "science-research",
    }  # fmt: skip
    assert (out / "business-enterprise" / "occubench-153c260a856a.yaml").is_file()
    checked = _occusim("validate", str(out))
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout == "ok: 64 scenarios, 64 tasks, 0 errors\n"


def test_existing_files_are_kept_unless_forced(occubench_root, tmp_path, capsys):
    out = tmp_path / "imported"
    assert main(["import", "occubench", str(occubench_root), "--out", str(out)]) == 0
    target = out / "business-enterprise" / "occubench-153c260a856a.yaml"
    target.write_text("edited by hand\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["import", "occubench", str(occubench_root), "--out", str(out)]) == 1
    assert "64 of 64 files already exist" in capsys.readouterr().err
    assert target.read_text(encoding="utf-8") == "edited by hand\n"
    assert main(["import", "occubench", str(occubench_root), "--out", str(out), "--force"]) == 0
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
