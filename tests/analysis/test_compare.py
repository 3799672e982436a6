"""`occusim compare` on two synthetic run folders: paired differences, dropped pairs, significance."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import pytest
from test_metrics import row

from occusim.analysis import RunConfig, RunDir, compare_runs
from occusim.clients.cli import main

TASKS = [f"s/t{index:02d}" for index in range(20)]


def write(folder: Path, outcomes: dict[tuple[str, str], list[bool]], *, agent: str = "agent-a",
          world: str = "world-y", skip: tuple[tuple[str, str], ...] = ()) -> Path:
    run_dir = RunDir(folder)
    run_dir.write_config(RunConfig(agent_model=agent, world_model=world, judge_model="judge-z",
                                   faults=sorted({mode for _, mode in outcomes}), trials=2))
    for (task, mode), trials in outcomes.items():
        for trial, passed in enumerate(trials):
            failed = (task, mode) in skip
            run_dir.append_row(row(task, mode, trial, None if failed else passed,
                                   status="infra_error" if failed else "ok"))
    return folder


def outcomes(rule) -> dict[tuple[str, str], list[bool]]:
    return {(task, mode): [rule(index, mode, trial) for trial in range(2)]
            for index, task in enumerate(TASKS) for mode in ("E0", "E2")}


def test_a_clear_difference_is_significant(tmp_path: Path):
    strong = write(tmp_path / "a", outcomes(lambda i, mode, trial: mode == "E0" or i % 4 != 0))
    weak = write(tmp_path / "b", outcomes(lambda i, mode, trial: mode == "E0" and i % 2 == 0), agent="agent-b")

    comparison = compare_runs(strong, weak)

    e0, e2 = comparison.modes
    assert (e0.mode, e0.tasks, e0.rate_a, e0.rate_b) == ("E0", 20, 1.0, 0.5)
    assert (e2.mode, e2.rate_a, e2.rate_b) == ("E2", 0.75, 0.0)
    assert e2.difference == pytest.approx(0.75) and e2.ci is not None and e2.ci.low > 0
    # 15 tasks better in A, none worse: the exact sign test gives 2 / 2**15.
    assert e2.p_value == pytest.approx(2 / 2**15) and e2.significant
    # 10 tasks better in E0, none worse.
    assert e0.p_value == pytest.approx(2 / 2**10)
    assert comparison.overall is not None and comparison.overall.pairs == 40 and comparison.overall.significant
    assert comparison.overall.difference == pytest.approx((0.5 + 0.75) / 2)
    assert comparison.other_differences == []


def test_identical_runs_do_not_differ(tmp_path: Path):
    rule = outcomes(lambda i, mode, trial: (i + trial) % 3 == 0)
    comparison = compare_runs(write(tmp_path / "a", rule), write(tmp_path / "b", rule))

    for difference in (*comparison.modes, comparison.overall):
        assert difference is not None
        assert difference.difference == 0 and difference.p_value == 1.0 and not difference.significant
        assert difference.ci is not None and difference.ci.low == difference.ci.high == 0


def test_a_small_mixed_difference_matches_mcnemar(tmp_path: Path):
    """One trial per task: the per-task test is the exact McNemar test on the discordant tasks."""
    a = {(task, "E0"): [index < 9] for index, task in enumerate(TASKS)}
    b = {(task, "E0"): [index < 4 or index == 15] for index, task in enumerate(TASKS)}

    (e0,) = compare_runs(write(tmp_path / "a", a), write(tmp_path / "b", b)).modes

    # Discordant: 5 tasks pass only in A, 1 only in B.
    mcnemar = sum(comb(6, k) for k in range(7) if abs(2 * k - 6) >= 4) / 2**6
    assert e0.p_value == pytest.approx(mcnemar) and not e0.significant
    assert e0.difference == pytest.approx(4 / 20)


def test_only_pairs_scored_in_both_runs_count(tmp_path: Path):
    a = outcomes(lambda i, mode, trial: True)
    a[("s/extra", "E0")] = [True, True]
    b = outcomes(lambda i, mode, trial: True)
    b[("s/extra", "E2")] = [False, False]

    comparison = compare_runs(write(tmp_path / "a", a, skip=(("s/t03", "E2"),)),
                              write(tmp_path / "b", b, world="world-other"))

    assert comparison.pairs == 39
    assert (comparison.only_a, comparison.only_b) == (1, 2)  # a: s/extra E0; b: s/extra E2 and s/t03 E2
    assert comparison.modes[1].tasks == 19
    assert comparison.other_differences == ["world_model: 'world-y' vs 'world-other'"]


def test_cli_prints_the_table_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    a = write(tmp_path / "a", outcomes(lambda i, mode, trial: True))
    b = write(tmp_path / "b", outcomes(lambda i, mode, trial: i % 2 == 0), agent="agent-b")

    assert main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "| E0 | 20 | 100.0% | 50.0% | +50.0% |" in text
    assert "| all | 20 | 100.0% | 50.0% | +50.0% |" in text
    assert "40 (task, fault mode) pairs scored in both runs; dropped: 0 scored in A only, 0 scored in B only" in text
    assert "sign-flip permutation" in text

    assert main(["compare", str(a), str(b), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pairs"] == 40 and data["modes"][0]["significant"] is True


def test_cli_explains_unusable_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    a = write(tmp_path / "a", {("s/a", "E0"): [True]})
    b = write(tmp_path / "b", {("s/b", "E0"): [True]})

    assert main(["compare", str(a), str(b)]) == 2
    assert "no (task, fault mode) pair was scored in both runs" in capsys.readouterr().err
    assert main(["compare", str(a), str(tmp_path / "missing")]) == 2
    assert "run.json not found" in capsys.readouterr().err


def test_help_teaches_the_method(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = capsys.readouterr().out
    assert "RUN_A" in text and "paired bootstrap over tasks" in text and "McNemar" in text


def test_every_setting_and_provenance_difference_is_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from occusim.analysis import Provenance

    rule = outcomes(lambda i, mode, trial: True)
    a, b = write(tmp_path / "a", rule), write(tmp_path / "b", rule)
    # Two runs that differ only in the agent's temperature.
    config_b = RunDir(b).read_config()
    RunDir(b).write_config(config_b.model_copy(update={"agent_temperature": 0.2}))
    comparison = compare_runs(a, b)
    assert comparison.differences == ["agent_temperature: 1.0 vs 0.2"] and comparison.other_differences == []
    assert main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "Runs differ in" in text and "agent_temperature: 1.0 vs 0.2" in text

    # Seeds, judge votes, protocol, code and prompt versions, judge settings: each named; how the run was
    # executed (concurrency, workers) is not.
    provenance = Provenance(occusim_version="1.0", prompt_versions={"agent": "aaa", "judge": "j1"},
                            judge_settings={"temperature": 0.0})
    RunDir(a).write_config(RunDir(a).read_config().model_copy(update={"provenance": provenance, "concurrency": 9}))
    changed = provenance.model_copy(update={"occusim_version": "1.1", "prompt_versions": {"agent": "bbb", "judge": "j1"},
                                            "judge_settings": {"temperature": 0.7}})
    RunDir(b).write_config(config_b.model_copy(update={"seed": 5, "judge_votes": 5, "protocol": "occubench",
                                                       "provenance": changed, "workers": 3}))
    assert compare_runs(a, b).differences == [
        "seed: 0 vs 5", "judge_votes: 3 vs 5", "protocol: 'native' vs 'occubench'",
        "occusim_version: '1.0' vs '1.1'", "prompt_versions[agent]: 'aaa' vs 'bbb'",
        "judge_settings[temperature]: 0.0 vs 0.7",
    ]
    identical = compare_runs(a, a)
    assert identical.differences == []
