"""`occusim compare` across world models: rank agreement of agents, outcome agreement and Cohen's kappa."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from test_metrics import row

from occusim.analysis import RunConfig, RunDir, load_runs, simulator_agreement
from occusim.clients.cli import main

TASKS = [f"s/t{index:02d}" for index in range(20)]
AGENTS = ("strong", "mid", "weak")


def category(index: int) -> str:
    return "Cat A" if index % 2 == 0 else "Cat B"


def write(folder: Path, agent: str, world: str, passes: Callable[[int], bool], *,
          failed: tuple[int, ...] = ()) -> Path:
    """One run of `agent` under `world`: one E0 trial per task, passing when passes(task index)."""
    run_dir = RunDir(folder)
    run_dir.write_config(RunConfig(agent_model=agent, world_model=world, judge_model="judge-z", faults=["E0"]))
    for index, task in enumerate(TASKS):
        infra = index in failed
        result = row(task, "E0", 0, None if infra else passes(index), category=category(index),
                     status="infra_error" if infra else "ok")
        run_dir.append_row(result.model_copy(update={"agent_model": agent, "world_model": world}))
    return folder


# Tasks each agent passes (index below the bound) under each world model: w2 keeps the ranking, w3 reverses it.
BOUNDS = {"w1": {"strong": 15, "mid": 10, "weak": 5},
          "w2": {"strong": 14, "mid": 11, "weak": 4},
          "w3": {"strong": 5, "mid": 10, "weak": 15}}


def runs(tmp_path: Path, worlds: tuple[str, ...] = ("w1", "w2", "w3"), **failed: tuple[int, ...]) -> list[Path]:
    return [write(tmp_path / f"{agent}-{world}", agent, world, lambda i, b=BOUNDS[world][agent]: i < b,
                  failed=failed.get(f"{agent}_{world}", ()))
            for world in worlds for agent in AGENTS]


def test_agreement_between_two_world_models_by_hand(tmp_path: Path):
    result = simulator_agreement(load_runs(runs(tmp_path, ("w1", "w2"))))

    (pair,) = result.pairs
    assert (pair.world_a, pair.world_b, pair.agents, pair.ranked_tasks) == ("w1", "w2", 3, 20)
    # Same order of the three agents under both: 3 of 3 agent pairs concordant.
    assert (pair.concordant_pairs, pair.agent_pairs, pair.rank_agreement) == (3, 3, 1.0)
    # 60 outcomes; strong differs on t14, mid on t10, weak on t04.
    assert (pair.units, pair.both_pass, pair.both_fail, pair.pass_a_only, pair.pass_b_only) == (60, 28, 29, 2, 1)
    assert pair.outcome_agreement == pytest.approx(57 / 60)
    # p_o = 0.95; p_e = 0.5 * 29/60 + 0.5 * 31/60 = 0.5; kappa = (0.95 - 0.5) / 0.5.
    assert pair.kappa == pytest.approx(0.9)


def test_a_reversed_ranking_disagrees_on_every_agent_pair(tmp_path: Path):
    result = simulator_agreement(load_runs(runs(tmp_path)))

    by_worlds = {(pair.world_a, pair.world_b): pair for pair in result.pairs}
    assert list(by_worlds) == [("w1", "w2"), ("w1", "w3"), ("w2", "w3")]
    assert by_worlds["w1", "w3"].rank_agreement == 0.0 and by_worlds["w2", "w3"].rank_agreement == 0.0
    reversed_pair = by_worlds["w1", "w3"]
    # strong and weak swap: 10 outcomes each differ (t05-t14), mid's agree.
    assert reversed_pair.units - reversed_pair.both_pass - reversed_pair.both_fail == 20
    assert reversed_pair.kappa is not None and reversed_pair.kappa < by_worlds["w1", "w2"].kappa  # type: ignore[operator]


def test_categories_split_the_outcomes(tmp_path: Path):
    result = simulator_agreement(load_runs(runs(tmp_path, ("w1", "w2"))))

    cat_a, cat_b = result.by_category
    assert (cat_a.category, cat_b.category) == ("Cat A", "Cat B")
    assert cat_a.units == cat_b.units == 30 and cat_a.ranked_tasks == cat_b.ranked_tasks == 10
    # The differing tasks t04, t10 and t14 are all even: category B agrees everywhere.
    assert cat_b.outcome_agreement == 1.0 and cat_b.kappa == 1.0
    assert cat_a.outcome_agreement == pytest.approx(27 / 30)
    overall = result.pairs[0]
    for field in ("both_pass", "both_fail", "pass_a_only", "pass_b_only"):
        assert getattr(cat_a, field) + getattr(cat_b, field) == getattr(overall, field)


def test_ties_count_as_the_same_order_and_unscored_tasks_are_dropped(tmp_path: Path):
    folders = [write(tmp_path / "a1", "a", "w1", lambda i: i < 10), write(tmp_path / "b1", "b", "w1", lambda i: i < 10),
               write(tmp_path / "a2", "a", "w2", lambda i: i < 12, failed=(19,)),
               write(tmp_path / "b2", "b", "w2", lambda i: i < 12)]

    (pair,) = simulator_agreement(load_runs(folders)).pairs

    # a and b tie under both world models (t19 is left out for both: a's run there was an infra error).
    assert (pair.rank_agreement, pair.ranked_tasks) == (1.0, 19)
    assert pair.units == 39


def test_one_agent_under_two_world_models_has_no_rank_agreement(tmp_path: Path):
    folders = [write(tmp_path / "a1", "a", "w1", lambda i: i < 10), write(tmp_path / "a2", "a", "w2", lambda i: i < 10)]

    (pair,) = simulator_agreement(load_runs(folders)).pairs

    assert pair.agent_pairs == 0 and pair.rank_agreement is None
    assert pair.outcome_agreement == 1.0 and pair.kappa == 1.0


def test_cli_prints_markdown_html_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    folders = [str(folder) for folder in runs(tmp_path, ("w1", "w2"))]

    assert main(["compare", *folders]) == 0
    text = capsys.readouterr().out
    assert "# Cross-simulator agreement" in text
    assert "| w1 | w2 | 3 | 20 | 100.0% (3/3) | 95.0% (57/60) | 0.900 | 28/29/2/1 |" in text
    assert "| Cat B | w1 | w2 | 3 | 10 |" in text

    assert main(["compare", *folders, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pairs"][0]["kappa"] == pytest.approx(0.9) and data["world_models"] == ["w1", "w2"]

    page = tmp_path / "agreement.html"
    assert main(["compare", *folders, "--format", "html", "--out", str(page)]) == 0
    assert "<h2>Agreement between world models</h2>" in page.read_text()


def test_cli_explains_unusable_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    a1, b1 = write(tmp_path / "a1", "a", "w1", lambda i: True), write(tmp_path / "b1", "b", "w1", lambda i: True)
    c1 = write(tmp_path / "c1", "c", "w1", lambda i: True)
    again = write(tmp_path / "again", "a", "w1", lambda i: False)
    a2 = write(tmp_path / "a2", "a", "w2", lambda i: True)

    assert main(["compare", str(a1), str(b1), str(c1)]) == 2
    assert "3 runs under one world model" in capsys.readouterr().err
    assert main(["compare", str(a1), str(again), str(a2)]) == 2
    assert "both ran agent a under world model w1" in capsys.readouterr().err
    assert main(["compare", str(a1)]) == 2
    assert "at least two run folders" in capsys.readouterr().err


def test_two_runs_under_one_world_model_stay_a_paired_comparison_in_every_format(tmp_path: Path,
                                                                                 capsys: pytest.CaptureFixture[str]):
    a, b = write(tmp_path / "a", "a", "w1", lambda i: True), write(tmp_path / "b", "b", "w1", lambda i: i < 10)

    assert main(["compare", str(a), str(b), "--format", "html"]) == 0
    page = capsys.readouterr().out
    assert "<h1>Paired comparison:" in page and "<td>E0</td><td>20</td><td>100.0%</td><td>50.0%</td>" in page
    assert main(["compare", str(a), str(b), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["agent_b"] == "b"
