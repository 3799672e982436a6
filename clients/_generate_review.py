"""The review sheet of a generated scenario (Markdown): what a reviewer must check against the sources, the gates'
table, the simcheck figures, what the author model was unsure of, and the trail of every stage call."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._generate_draft import STAGES
from ._simcheck_report import FIGURE_HEADERS, figure_cells, step_problems

if TYPE_CHECKING:
    from occusim.judge import DiscriminationReport

    from ._generate_result import GenerationResult
    from ._generate_verify import Verification


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(headers) + " |",
        "|" + "---|" * len(headers),
        *("| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows),
    ]


def review_sheet(result: GenerationResult) -> str:
    """The whole sheet; every section says plainly when the pipeline did not get that far."""
    settings, draft = result.settings, result.draft
    brief = draft.brief
    title = f"{brief.name} (`{brief.id}`)" if brief else settings.occupation
    lines = [
        f"# Review sheet: {title}",
        "",
        _status(result),
        "",
        f"- occupation: {settings.occupation}; category: {settings.category}",
        f"- author model: `{settings.author.model.model}`; world model: `{settings.world.name}`",
        f"- stage calls: {len(result.trail)}; verification rounds: {len(result.verifications)} "
        f"(at most {settings.rounds + 1}); written {result.created_at.isoformat(timespec='seconds')}",
        "",
    ]
    lines += _rules(result) + _tasks(result) + _unsure(result)
    last = result.verifications[-1] if result.verifications else None
    lines += _validation(last) + _gates(last.gates if last else None) + _simcheck(last)
    lines += _trail(result)
    return "\n".join(lines) + "\n"


def _status(result: GenerationResult) -> str:
    if result.failure is not None:
        return (
            f"**Stopped at the {result.failure.stage} stage**: {result.failure}. No scenario file was written; "
            "the sections below show what the earlier stages wrote."
        )
    if result.verified:
        return (
            "**Verified**: it passes `validate`, the discrimination gates and simcheck. It is still a draft: "
            "check every rule, number and trap below against its source before promoting it to the catalog."
        )
    written = (
        "" if result.scenario is not None else " The parts do not make a scenario file, so none was written."
    )
    return (
        "**Not verified**: problems remain after the last round of repair (below). Fix them by hand or run again."
        + written
    )


def _rules(result: GenerationResult) -> list[str]:
    brief = result.draft.brief
    lines = ["## Rules to check against their sources", ""]
    if brief is None:
        return [*lines, "No brief was accepted.", ""]
    rows = [
        [str(n), rule.rule, rule.source, ", ".join(rule.numbers) or "(none)", "[ ]"]
        for n, rule in enumerate(brief.rules, 1)
    ]
    lines += _table(["#", "rule", "source", "numbers to check", "checked"], rows)
    lines += [
        "",
        "Hidden fields (the agent must look these up): " + "; ".join(brief.hidden_fields),
        "",
        "Traps of the brief:",
        *(f"- {trap}" for trap in brief.traps),
        "",
    ]
    return lines


def _tasks(result: GenerationResult) -> list[str]:
    draft = result.draft
    lines = ["## Tasks and their traps", ""]
    if draft.tasks is None:
        return [*lines, "No tasks were accepted.", ""]
    rubrics = {entry.task: entry.rubric for entry in draft.rubrics.rubrics} if draft.rubrics else {}
    references = (
        {entry.task: entry.reference_solution for entry in draft.references.references}
        if draft.references
        else {}
    )
    rows = []
    for task in draft.tasks.tasks:
        rubric = rubrics.get(task.id)
        critical = ", ".join(i.id for i in rubric.items if i.critical) if rubric else "(no rubric)"
        guards = ", ".join(i.id for i in rubric.items if getattr(i, "guard", False)) if rubric else ""
        steps = str(len(references[task.id])) if task.id in references else "(none)"
        rows.append([task.id, str(task.difficulty), task.trap, steps, critical, guards or "(none)", "[ ]"])
    lines += _table(
        [
            "task",
            "difficulty",
            "trap (in the data)",
            "reference steps",
            "critical items",
            "guards",
            "checked",
        ],
        rows,
    )
    return [*lines, ""]


def _unsure(result: GenerationResult) -> list[str]:
    lines = ["## What the author model was unsure of", ""]
    found = [(stage, doubt) for stage in STAGES for doubt in getattr(result.draft.part(stage), "unsure", [])]
    if not found:
        return [
            *lines,
            "It named nothing. That is not evidence of accuracy: check the rules and numbers anyway.",
            "",
        ]
    return [*lines, *(f"- ({stage}) {doubt}" for stage, doubt in found), ""]


def _validation(last: Verification | None) -> list[str]:
    lines = ["## validate", ""]
    if last is None:
        return [*lines, "Not run: the stages did not finish.", ""]
    if not last.validation:
        return [*lines, "No problem: the format, the schemas, the references and the rubric audit pass.", ""]
    return [*lines, *(f"- {problem}" for problem in last.validation), ""]


def _gates(gates: DiscriminationReport | None) -> list[str]:
    lines = ["## Discrimination gates", ""]
    if gates is None:
        return [*lines, "Not run: the scenario did not validate.", ""]
    rows = []
    for task in gates.tasks:
        others = [b.score for b in task.baselines if b.kind != "reference"]
        idle = next((b.score for b in task.baselines if b.kind == "do-nothing"), None)
        rows.append(
            [
                task.task_id,
                str(len(task.baselines)),
                "n/a" if idle is None else f"{idle:g}",
                f"{max(others, default=0.0):g}",
                "; ".join(f"{f.gate}: {f.message}" for f in task.failures) or "pass",
            ]
        )
    lines += _table(["task", "baselines", "do-nothing score", "best baseline score", "gates"], rows)
    return [*lines, "", gates.summary(), ""]


def _simcheck(last: Verification | None) -> list[str]:
    lines = ["## Simcheck of the references", ""]
    report = last.simcheck if last else None
    if last is not None and last.simcheck_error:
        return [
            *lines,
            f"Not measured: {last.simcheck_error}. Check the world model's settings and run again.",
            "",
        ]
    if last is None or report is None:
        return [*lines, "Not run: the scenario did not pass validate and the gates.", ""]
    rows = [[figures.group, *figure_cells(figures)] for figures in [*report.by_tool, report.overall]]
    lines += [
        f"World model `{report.world_model}`, every reference call simulated from its golden state; "
        f"faithful steps required: {last.min_faithful:.0%}.",
        "",
    ]
    lines += _table(["tool", *FIGURE_HEADERS], rows)
    wrong = [step for step in report.steps if not (step.fidelity is not None and step.fidelity.faithful)]
    if wrong:
        lines += [
            "",
            "Steps the world model simulated otherwise:",
            *(
                f"- {step.task_id} step {step.index + 1} ({step.tool}): {'; '.join(step_problems(step))}"
                for step in wrong
            ),
        ]
    return [*lines, ""]


def _trail(result: GenerationResult) -> list[str]:
    rows = [
        [
            call.stage,
            str(call.round),
            str(call.attempt),
            "accepted" if call.accepted else "kept, with problems" if call.kept else "rejected",
            "; ".join(call.problems),
        ]
        for call in result.trail
    ]
    return [
        "## Trail of the author model's answers",
        "",
        "Round 0 is the first pass; round n the n-th repair after verification. When no answer of a stage "
        "passed its checks, the valid one with the fewest problems was kept and its problems went on to "
        "verification.",
        "",
        *_table(["stage", "round", "attempt", "outcome", "problems"], rows),
    ]
