"""Provenance in run.json: what it records, and resuming a run whose provenance differs is refused."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

import occusim
from occusim.analysis import Provenance, RunConfig, RunDir, RunError, load_rows
from occusim.analysis._provenance import provenance_changes
from occusim.clients import current_provenance
from occusim.clients.cli import main
from occusim.environments import load_catalog
from occusim.judge import PROMPT_VERSION
from tests.helpers import TASK_B, ReplayWorld, ScriptedAgent, passing_judge


def test_current_provenance_records_version_and_prompt_versions():
    provenance = current_provenance()

    assert provenance.protocol == "native" and provenance.harness_files == {}
    assert provenance.occusim_version == occusim.__version__
    assert set(provenance.prompt_versions) == {"agent", "world_model", "fault_injection", "judge"}
    assert provenance.prompt_versions["judge"] == PROMPT_VERSION
    assert all(re.fullmatch(r"[0-9a-f]{16}", version) for version in provenance.prompt_versions.values())


def test_the_caller_sets_protocol_and_harness_files(tmp_path: Path):
    harness = tmp_path / "agent.py"
    harness.write_text("print('x')\n")
    given = Provenance(protocol="occubench",
                       harness_files={"occubench/agent.py": hashlib.sha256(harness.read_bytes()).hexdigest()})

    provenance = current_provenance(given)

    assert provenance.protocol == "occubench"
    assert provenance.harness_files == given.harness_files
    assert len(provenance.harness_files["occubench/agent.py"]) == 64
    assert provenance.prompt_versions == current_provenance().prompt_versions


def test_the_agent_prompt_version_follows_its_template(monkeypatch: pytest.MonkeyPatch):
    before = current_provenance()
    monkeypatch.setattr("occusim.clients._conversation.SYSTEM_PROMPT", "You are {role}. Use {submit}.")

    after = current_provenance()

    assert provenance_changes(before, after) == [
        f"prompt_versions[agent]: {before.prompt_versions['agent']!r} -> {after.prompt_versions['agent']!r}"]


def config(**provenance: object) -> RunConfig:
    return RunConfig(agent_model="a", world_model="w", judge_model="j",
                     provenance=Provenance(**provenance) if provenance else None)


def test_resuming_with_another_provenance_is_refused(tmp_path: Path):
    folder = RunDir(tmp_path)
    folder.write_config(config(protocol="native", occusim_version="0.1.0", prompt_versions={"judge": "aaa"}))

    folder.check_resumable(config(protocol="native", occusim_version="0.1.0", prompt_versions={"judge": "aaa"}))
    with pytest.raises(RunError) as error:
        folder.check_resumable(config(protocol="occubench", occusim_version="0.1.0",
                                      prompt_versions={"judge": "bbb"}, harness_files={"occubench/lwm.py": "f00"}))

    message = str(error.value)
    assert "protocol: 'native' -> 'occubench'" in message
    assert "prompt_versions[judge]: 'aaa' -> 'bbb'" in message
    assert "harness_files[occubench/lwm.py]: 'absent' -> 'f00'" in message
    assert "choose another --out folder" in message


def test_a_folder_without_provenance_is_not_resumed_with_one(tmp_path: Path):
    folder = RunDir(tmp_path)
    folder.write_config(config())

    with pytest.raises(RunError, match=r"provenance: not recorded \(written by an older occusim\) -> recorded"):
        folder.check_resumable(config(protocol="native"))


def run_cli(out: Path, agent: str, world: str, judge: str) -> int:
    return main(["run", "--agent-model", agent, "--world-model", world, "--judge-model", judge, "--tasks", TASK_B,
                 "--faults", "E0", "--out", str(out), "--no-progress"])


def test_run_records_provenance_and_refuses_to_resume_under_another_prompt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "run"
    catalog = load_catalog([])
    models = (ScriptedAgent(lambda task, seed: "replay", catalog=catalog, name="prov-agent").model,
              ReplayWorld(catalog, name="prov-world").model, passing_judge("prov-judge"))
    assert run_cli(out, *models) == 0
    recorded, rows = load_rows(out)
    assert recorded.provenance == current_provenance()
    assert len(rows) == 1 and rows[0].scored

    assert run_cli(out, *models) == 0  # same provenance: resumes (nothing left to run)
    assert "0 episode(s) run, 1 already done" in capsys.readouterr().out

    monkeypatch.setattr("occusim.clients._conversation.SYSTEM_PROMPT", "You are {role}. Finish with {submit}.")
    assert run_cli(out, *models) == 2
    assert "prompt_versions[agent]:" in capsys.readouterr().err
    assert load_rows(out)[0].provenance == recorded.provenance  # run.json was left as it was


def test_the_judge_settings_are_part_of_the_provenance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("OCCUSIM_JUDGE_REASKS", raising=False)
    before = current_provenance()
    assert before.judge_settings["reasks"] == 2 and before.judge_settings["temperature"] is None
    folder = RunDir(tmp_path)
    folder.write_config(RunConfig(agent_model="a", world_model="w", judge_model="j", provenance=before))

    monkeypatch.setenv("OCCUSIM_JUDGE_REASKS", "5")
    with pytest.raises(RunError) as error:
        folder.check_resumable(RunConfig(agent_model="a", world_model="w", judge_model="j",
                                         provenance=current_provenance()))
    assert "judge_settings[reasks]: 2 -> 5" in str(error.value)
