"""The exemplar mechanism over the catalog's author labels (written with the catalog, so these figures test
the mechanism, not a judge's calibration): agreement with and without exemplars, the judge's disagreements
written as exemplar files, and judging with them (`--exemplars`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from occusim.clients.cli import main
from occusim.environments import load_catalog, read_exemplar_dir
from occusim.judge import agreement_by_group, compare_labels, judge, without_exemplars
from tests.helpers import calibrated_judge
from tests.helpers._catalog_labels import build_labels, labels_jsonl, read_answers

ANSWERS = Path(__file__).parent.parent / "fixtures" / "catalog_labels" / "answers.yaml"


@pytest.fixture(scope="module")
def catalog_labels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("labels") / "labels.jsonl"
    path.write_text(labels_jsonl(build_labels(read_answers(ANSWERS))), encoding="utf-8")
    return path


def _agreement(labels: Path, capsys, *extra: str) -> dict:
    assert main(["judge-agreement", str(labels), "--judge-model", calibrated_judge(), "--votes", "1", "--json",
                 *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_labelled_set_covers_the_first_twenty_scenarios_with_three_kinds_of_answer() -> None:
    answers = read_answers(ANSWERS)
    catalog = load_catalog()
    assert len(answers) == 60 and len({a.task_id for a in answers}) == 60
    assert len({catalog.task(a.task_id).scenario for a in answers}) == 20
    labels = build_labels(answers, catalog)
    assert len(labels) == 180  # 60 passing, 60 near misses, 60 failing answers, one llm-item verdict each
    assert sorted(sum(label.labels.values()) for label in labels).count(1) == 60
    for label in labels:
        # Each answer is submitted at the end of the task's reference solution.
        assert [s.tool for s in label.trajectory.steps] == [
            s.tool for s in catalog.task(label.wanted_task_id).reference_solution
        ]


def test_exemplars_raise_the_agreement_of_a_judge_that_uses_them(catalog_labels: Path, capsys) -> None:
    report = _agreement(catalog_labels, capsys)
    without = report["without_exemplars"]["groups"]["llm items"]
    with_exemplars = report["groups"]["llm items"]
    assert report["episodes"] == 180 and without["labels"] == with_exemplars["labels"] == 180
    assert report["labelled_by"] == {"catalog-author": 180}  # the output says whose labels these are
    # The lenient judge reads figures, not reasoning: it passes 10 near misses that repeat the right numbers
    # and fails 5 correct answers that state them differently.
    assert (without["both_pass"], without["both_fail"], without["judge_only_pass"], without["expert_only_pass"]) == (
        55, 110, 10, 5
    )
    assert without["agreement"] == pytest.approx(165 / 180) and without["kappa"] == pytest.approx(0.816, abs=1e-3)
    # Shown each task's passing and near-miss exemplars, it follows the nearest one on 13 of those 15.
    assert (with_exemplars["judge_only_pass"], with_exemplars["expert_only_pass"]) == (1, 1)
    assert with_exemplars["agreement"] == pytest.approx(178 / 180)
    assert with_exemplars["kappa"] == pytest.approx(0.975, abs=1e-3)
    assert sorted(d["episode_id"] for d in report["disagreements"]) == [
        "ap-invoice-clerk--bank-change-fraud--fail",
        "iam-access-reviewer--leaver-cleanup--pass",
    ]


async def test_exemplars_taught_the_wrong_way_round_mislead_the_judge() -> None:
    # The figure moves because the judge follows what the exemplars say, not because they are present: with
    # every exemplar's verdict flipped, the judge fails the answers that resemble a passing one.
    catalog = load_catalog()
    labels = build_labels(read_answers(ANSWERS), catalog)
    model = calibrated_judge()
    tallies = {}
    for teaching in ("none", "flipped"):
        comparisons = []
        for line, label in enumerate(labels):
            task = without_exemplars(catalog.task(label.wanted_task_id))
            if teaching == "flipped":
                taught = catalog.task(task.id).rubric.exemplars
                task.rubric.exemplars = [e.model_copy(update={"passed": not e.passed}) for e in taught]
            verdict = await judge(task, label.trajectory, scenario=catalog.scenario_of(task), model=model, votes=1)
            comparisons += compare_labels(verdict, label, line)
        tallies[teaching] = agreement_by_group(comparisons)["llm items"]
    assert tallies["none"].agreement == pytest.approx(165 / 180)
    # 61 of 180: 58 of the 60 passing answers now fail, and 61 near misses and failing answers pass.
    flipped = tallies["flipped"]
    assert (flipped.both_pass, flipped.both_fail, flipped.judge_only, flipped.expert_only) == (2, 59, 61, 58)


def test_disagreements_become_exemplars_that_fix_them(catalog_labels: Path, tmp_path: Path, capsys) -> None:
    lines = catalog_labels.read_text(encoding="utf-8").splitlines()
    wanted = ("ap-invoice-clerk/bank-change-fraud", "iam-access-reviewer/leaver-cleanup")
    subset = tmp_path / "subset.jsonl"
    subset.write_text("\n".join(line for line in lines if json.loads(line)["task_id"] in wanted) + "\n")
    calibration = tmp_path / "calibration"

    first = _agreement(subset, capsys, "--write-exemplars", str(calibration))
    assert first["groups"]["llm items"]["labels"] == 6 and first["groups"]["llm items"]["agreement"] == 4 / 6
    assert first["without_exemplars"]["groups"]["llm items"]["agreement"] == 3 / 6
    written = first["exemplars_written"]
    assert written["exemplars"] == 2 and sorted(Path(p).name for p in written["files"]) == [
        "ap-invoice-clerk__bank-change-fraud.yaml",
        "iam-access-reviewer__leaver-cleanup.yaml",
    ]
    files = {entry.task_id: entry.exemplars for _, entry in read_exemplar_dir(calibration)}
    fraud = files["ap-invoice-clerk/bank-change-fraud"]
    assert [(e.item_id, e.passed) for e in fraud] == [("red-flags", False)]
    assert "Final answer: Called +1 216-555-0877" in fraud[0].excerpt and "perform_callback(" in fraud[0].excerpt
    assert fraud[0].explanation == "Written to fail: the decision itself is wrong."
    assert [(e.item_id, e.passed) for e in files["iam-access-reviewer/leaver-cleanup"]] == [("soc-escalation", True)]

    # Judged again with them, the judge agrees with the expert on every label; nothing new is written.
    second = _agreement(subset, capsys, "--exemplars", str(calibration), "--write-exemplars", str(calibration))
    assert second["groups"]["llm items"]["agreement"] == 1.0
    assert second["without_exemplars"]["groups"]["llm items"]["agreement"] == 3 / 6
    assert second["exemplars_written"] == {"exemplars": 0, "files": {}}


def test_the_table_shows_both_figures_and_what_was_written(catalog_labels: Path, tmp_path: Path, capsys,
                                                           monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "240")
    lines = catalog_labels.read_text(encoding="utf-8").splitlines()[:6]
    subset = tmp_path / "subset.jsonl"
    subset.write_text("\n".join(lines) + "\n")
    assert main(["judge-agreement", str(subset), "--judge-model", calibrated_judge(), "--votes", "1",
                 "--write-exemplars", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "what the exemplars change" in out and "agreement without" in out and "agreement with" in out
    assert "labelled by: catalog-author (6 episodes)" in out
    assert "into " + str(tmp_path / "out") in out


def test_bad_exemplar_folders_are_refused_with_exit_2(catalog_labels: Path, tmp_path: Path, capsys) -> None:
    lines = catalog_labels.read_text(encoding="utf-8").splitlines()[:1]
    subset = tmp_path / "subset.jsonl"
    subset.write_text("\n".join(lines) + "\n")
    args = ["judge-agreement", str(subset), "--judge-model", calibrated_judge(), "--exemplars"]
    assert main([*args, str(tmp_path / "absent")]) == 2
    assert "no such folder of exemplar files" in capsys.readouterr().err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.yaml").write_text("task_id: ap-invoice-clerk/no-such-task\nexemplars:\n  - {excerpt: e, passed: true}\n")
    assert main([*args, str(bad)]) == 2
    assert "no loaded task 'ap-invoice-clerk/no-such-task'" in capsys.readouterr().err
    (bad / "x.yaml").write_text(
        "task_id: ap-invoice-clerk/bank-change-fraud\nexemplars:\n  - {item_id: nope, excerpt: e, passed: true}\n"
    )
    assert main([*args, str(bad)]) == 2
    assert "exemplars[0].item_id: task 'ap-invoice-clerk/bank-change-fraud' has no rubric item 'nope'" in (
        capsys.readouterr().err
    )
