"""Agreement and Cohen's kappa on worked examples."""

from __future__ import annotations

import pytest

from occusim.judge import Agreement, agreement, cohens_kappa


def pairs(both_pass: int, both_fail: int, judge_only: int, expert_only: int) -> list[tuple[bool, bool]]:
    return (
        [(True, True)] * both_pass
        + [(False, False)] * both_fail
        + [(True, False)] * judge_only
        + [(False, True)] * expert_only
    )


def test_textbook_example() -> None:
    # 50 items: 20 both pass, 15 both fail, judge-only 5, expert-only 10.
    # p_o = 35/50 = 0.7; judge passes 25/50, expert 30/50; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = 0.4.
    result = agreement(pairs(20, 15, 5, 10))
    assert result == Agreement(both_pass=20, both_fail=15, judge_only=5, expert_only=10)
    assert result.total == 50
    assert result.agreement == pytest.approx(0.7)
    assert result.chance_agreement == pytest.approx(0.5)
    assert result.kappa == pytest.approx(0.4)


def test_kappa_can_be_negative_and_perfect() -> None:
    # Always disagreeing on a balanced set: p_o = 0, p_e = 0.5, kappa = -1.
    assert cohens_kappa(pairs(0, 0, 5, 5)) == pytest.approx(-1.0)
    assert cohens_kappa(pairs(3, 7, 0, 0)) == pytest.approx(1.0)


def test_high_agreement_on_a_skewed_set_is_modest_kappa() -> None:
    # 90 of 100 agree, but both raters pass almost everything: p_e = 0.9*0.9 + 0.1*0.1 = 0.82.
    result = agreement(pairs(85, 5, 5, 5))
    assert result.agreement == pytest.approx(0.9)
    assert result.kappa == pytest.approx((0.9 - 0.82) / 0.18)


def test_undefined_cases() -> None:
    assert agreement([]).agreement is None and agreement([]).kappa is None
    only_passes = agreement(pairs(4, 0, 0, 0))
    assert only_passes.agreement == 1.0 and only_passes.kappa is None  # p_e = 1: kappa is undefined
