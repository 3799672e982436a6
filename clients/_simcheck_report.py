"""The simcheck report: figures by scenario and by tool, and the steps that went wrong, as Markdown, HTML, JSON."""

from __future__ import annotations

from pathlib import Path

from occusim.analysis import Report, Share, Table, render_html, render_markdown

from ._simcheck import CheckedStep, FidelityFigures, SimcheckReport

FIGURE_HEADERS = ["Steps", "Valid", "1st try", "Grounded", "Complete", "Values", "No invented", "Patch",
                  "Read-only", "Faithful"]
_NOTE = ("Each cell: share of the steps it applies to (count/total); see docs/metrics.md, \"Simulator fidelity\". "
         "Grounded: no ungrounded entity. Complete: no golden entity omitted. Values: state-derived fields agree. "
         "Patch: writing tools change the state as the golden step does. Read-only: read-only tools change nothing. "
         "Faithful: valid and passing every check.")
# The worst steps listed per check, so a large selection keeps a readable report.
_EXAMPLES = 20


def share_cell(share: Share, *, compact: bool = False) -> str:
    if share.rate is None:
        return "n/a"
    return f"{share.rate:.1%} {share.count}/{share.total}" if compact else f"{share.rate:.1%} ({share.count}/{share.total})"


def figure_cells(figures: FidelityFigures, *, compact: bool = False) -> list[str]:
    return [str(figures.steps), *(share_cell(share, compact=compact) for share in (
        figures.valid, figures.first_try, figures.grounded, figures.complete, figures.values_agree,
        figures.no_invented_fields, figures.patch_agrees, figures.read_only_kept, figures.faithful)
    )]


def _interval(share: Share) -> str:
    return "n/a" if share.ci is None else f"[{share.ci.low:.1%}, {share.ci.high:.1%}]"


def step_problems(step: CheckedStep) -> list[str]:
    """What differed between a simulated step and its golden one, one line per kind of difference."""
    fidelity = step.fidelity
    if fidelity is None:
        return [f"{step.status}: {step.error}"]
    found = [("audit flags", [flag.kind.value for flag in step.audit_flags]), ("ungrounded", fidelity.ungrounded), ("omitted", fidelity.omitted),
             ("values differ", fidelity.values_differing), ("invented fields", fidelity.invented_fields),
             ("patch lacks", fidelity.patch_missing), ("patch adds", fidelity.patch_extra),
             ("read-only call changed", fidelity.read_only_writes)]
    return [f"{name}: {', '.join(items[:6])}{' ...' if len(items) > 6 else ''}" for name, items in found if items]


def build_simcheck_report(result: SimcheckReport) -> Report:
    overall = result.overall
    usage = result.usage
    facts = [
        ("World model", result.world_model),
        ("Tasks", f"{result.tasks} ({result.task_count} with a reference solution)"),
        ("Steps", f"{overall.steps} reference calls, each simulated from its golden state "
                  f"({overall.unavailable} left out: provider unreachable)"),
        ("Faithful steps", f"{share_cell(overall.faithful)}, 95 % CI {_interval(overall.faithful)}"),
        ("Entity recall", f"{share_cell(overall.entity_recall)} of the golden observations' entities shown"),
        ("State-derived fields", f"{share_cell(overall.value_fields)} agree"),
        ("Per-step audit", f"flagged {share_cell(overall.audit_flagged)} of the valid steps: "
                           f"{share_cell(overall.audit_flagged_unfaithful)} of those that differ from the golden "
                           f"step, {share_cell(overall.audit_flagged_faithful)} of the faithful ones"),
        ("World model usage", f"{usage.calls:,} calls, {usage.prompt_tokens:,} prompt and "
                              f"{usage.completion_tokens:,} completion tokens, cost "
                              + ("unknown" if usage.cost_usd is None else f"${usage.cost_usd:.4f}")),
        ("Checked at", result.created_at.isoformat(timespec="seconds")),
    ]
    confidence = [[name, share_cell(share), _interval(share)] for name, share in (
        ("Valid", overall.valid), ("First try", overall.first_try), ("Grounded", overall.grounded),
        ("Complete", overall.complete), ("Entity recall", overall.entity_recall),
        ("Values agree (steps)", overall.values_agree), ("Values agree (fields)", overall.value_fields),
        ("No invented fields", overall.no_invented_fields), ("Patch agrees", overall.patch_agrees),
        ("Read-only kept", overall.read_only_kept), ("Faithful", overall.faithful))]
    tables = [
        Table("Fidelity overall", ["Figure", "Rate", "95 % CI"], confidence,
              note="95 % CI: bootstrap over tasks, as for completion; see docs/metrics.md."),
        Table("Fidelity by scenario", ["Scenario", *FIGURE_HEADERS],
              [[f.group, *figure_cells(f)] for f in [*result.by_scenario, overall]], note=_NOTE),
        Table("Fidelity by tool", ["Tool", *FIGURE_HEADERS], [[f.group, *figure_cells(f)] for f in result.by_tool]),
    ]
    wrong = [step for step in result.steps if step.status != "valid" or not step.fidelity or not step.fidelity.faithful]
    if wrong:
        tables.append(Table(
            f"Steps that differ from the golden step ({len(wrong)}; the first {min(len(wrong), _EXAMPLES)})",
            ["Task", "Call", "Tool", "What differs"],
            [[step.task_id, str(step.index + 1), step.tool, "; ".join(step_problems(step))] for step in wrong[:_EXAMPLES]],
            note="Every step is in the JSON file, with what differed."))
    return Report(f"occusim simcheck: {result.world_model}", facts, tables)


def write_simcheck(result: SimcheckReport, out: str | Path) -> list[Path]:
    """Write simcheck.md, simcheck.html and simcheck.json into the folder `out`; returns their paths."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    report = build_simcheck_report(result)
    paths = [folder / "simcheck.md", folder / "simcheck.html", folder / "simcheck.json"]
    paths[0].write_text(render_markdown(report), encoding="utf-8")
    paths[1].write_text(render_html(report), encoding="utf-8")
    paths[2].write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return paths
