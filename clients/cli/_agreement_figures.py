"""How `occusim judge-agreement` shows an `Agreement`: its JSON object and its table cells."""

from __future__ import annotations

from occusim.judge import Agreement


def agreement_json(a: Agreement, first: str = "judge", second: str = "expert") -> dict:
    """The counts and figures; `first` and `second` name the raters in the one-sided counts."""
    return {
        "labels": a.total,
        "agreement": a.agreement,
        "kappa": a.kappa,
        "both_pass": a.both_pass,
        "both_fail": a.both_fail,
        f"{first}_only_pass": a.judge_only,
        f"{second}_only_pass": a.expert_only,
    }


def groups_json(groups: dict[str, Agreement], first: str = "judge", second: str = "expert") -> dict:
    return {name: agreement_json(a, first, second) for name, a in groups.items()}


def figures(a: Agreement | None) -> tuple[str, str]:
    """The agreement as a percentage and kappa, or dashes when there is no pair."""
    if a is None or a.agreement is None:
        return "-", "-"
    return f"{a.agreement:.1%}", "undefined" if a.kappa is None else f"{a.kappa:.3f}"
