"""A run's report: tables and plots as Markdown, or as one self-contained HTML file."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from occusim.environments import Usage

from ._metrics import ROLES, Rate, compute_metrics, rates_by
from ._plots import Figure, figures
from ._results import ResultRow, RunConfig, load_rows

ReportFormat = Literal["md", "html"]


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]
    note: str = ""


@dataclass
class Report:
    """Everything a report shows, independent of the output format."""

    title: str
    facts: list[tuple[str, str]]
    tables: list[Table]
    figures: list[Figure] = field(default_factory=list)


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _rate(rate: Rate) -> list[str]:
    return [f"{rate.passed}/{rate.total}", _percent(rate.rate)]


def _usage_row(role: str, usage: Usage) -> list[str]:
    cost = "unknown" if usage.cost_usd is None else f"${usage.cost_usd:.4f}"
    return [role, f"{usage.calls:,}", f"{usage.cached_calls:,}", f"{usage.prompt_tokens:,}",
            f"{usage.completion_tokens:,}", cost]


def build_report(config: RunConfig, rows: list[ResultRow], *, with_figures: bool = True) -> Report:
    metrics = compute_metrics(rows)
    facts = [
        ("Agent model", config.agent_model),
        ("World model", config.world_model),
        ("Judge model", f"{config.judge_model} ({config.judge_votes} votes)"),
        ("Tasks", config.tasks),
        ("Fault modes", f"{', '.join(config.faults)} (count {config.fault_count}, duration {config.fault_duration})"),
        ("Trials", f"{config.trials} (seeds {config.seed}..{config.seed + config.trials - 1})"),
        ("Transport", config.transport),
        ("Episodes", f"{metrics.episodes} ({metrics.scored} scored, {metrics.infra_errors} infrastructure errors)"),
        ("Completion rate", f"{_percent(metrics.completion.rate)} ({metrics.completion.passed}/{metrics.completion.total})"),
        ("Mean score", "n/a" if metrics.mean_score is None else f"{metrics.mean_score:.3f}"),
        ("Robustness", ("undefined" if metrics.robustness.value is None else f"{metrics.robustness.value:.3f}")
         + f" - {metrics.robustness.note}"),
        ("Simulator error rate", f"{_percent(metrics.simulator_error_rate)} ({metrics.simulator_error_steps} of "
                                 f"{metrics.steps} steps)"),
    ]
    clean = metrics.by_fault_mode.get("E0")
    tables = [
        Table("Completion by fault mode", ["Fault mode", "Passed", "Rate", "Relative to E0"], [
            [mode, *_rate(rate), _percent(rate.rate / clean.rate) if clean and clean.rate and rate.rate is not None
             else "n/a"]
            for mode, rate in metrics.by_fault_mode.items()
        ]),
        Table("Completion by category", ["Category", "Passed", "Rate"],
              [[name, *_rate(rate)] for name, rate in metrics.by_category.items()]),
        Table("Completion by difficulty", ["Difficulty", "Passed", "Rate"],
              [[str(level), *_rate(rate)] for level, rate in metrics.by_difficulty.items()]),
        Table("pass@k and pass^k", ["k", "pass@k", "pass^k"],
              [[str(k), f"{metrics.pass_at_k[k]:.3f}", f"{metrics.pass_hat_k[k]:.3f}"] for k in metrics.pass_at_k],
              note="Unbiased estimators per (task, fault mode), averaged; see docs/metrics.md."),
        Table("Tokens and cost by role", ["Role", "Calls", "Cached", "Prompt tokens", "Completion tokens", "Cost"],
              [_usage_row(role, metrics.usage_by_role[role]) for role in ROLES],
              note="Includes the attempts that ended in infrastructure errors; cost is unknown for unpriced models."),
        _task_table(rows),
    ]
    if metrics.infra_errors:
        tables.append(Table("Infrastructure errors (not counted as agent failures)", ["Episode", "Error"],
                            [[message.split(": ", 1)[0], message.split(": ", 1)[1]]
                             for message in metrics.infra_error_messages]))
    return Report("occusim run report", facts, tables, figures(metrics, rows) if with_figures else [])


def _task_table(rows: list[ResultRow]) -> Table:
    modes = sorted({row.fault_mode for row in rows})
    cells: dict[tuple[str, str], Rate] = rates_by([row for row in rows if row.scored],
                                                  lambda row: (row.task_id, row.fault_mode))
    body = [[task, *(f"{cells[task, m].passed}/{cells[task, m].total}" if (task, m) in cells else "-"
                     for m in modes)] for task in sorted({task for task, _ in cells})]
    return Table("Passed trials by task", ["Task", *modes], body)


def render_markdown(report: Report, *, images: dict[str, str] | None = None) -> str:
    """Markdown; `images` maps figure names to the relative paths written beside the file."""
    lines = [f"# {report.title}", ""]
    lines += [f"- **{name}:** {value}" for name, value in report.facts]
    for figure in report.figures:
        if images and figure.name in images:
            lines += ["", f"![{figure.title}]({images[figure.name]})"]
    for table in report.tables:
        lines += ["", f"## {table.title}", ""]
        if table.note:
            lines += [table.note, ""]
        lines.append("| " + " | ".join(table.headers) + " |")
        lines.append("|" + "|".join("---" for _ in table.headers) + "|")
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in table.rows]
    return "\n".join(lines) + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:60rem;
color:#1d2733;padding:0 1rem}
h1{font-size:1.6rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #d9dee4;padding-bottom:.3rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dt{font-weight:600}dd{margin:0}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #d9dee4;padding:.3rem .6rem;text-align:left}
th{background:#f3f5f7}td{font-variant-numeric:tabular-nums}.note{color:#5b6770;font-size:.9rem}
figure{margin:1.5rem 0}figcaption{font-weight:600;margin-bottom:.4rem}img{max-width:100%;height:auto}
"""


def render_html(report: Report) -> str:
    """One self-contained page: inline CSS, plots embedded as base64 PNG, no external URL."""
    esc = html.escape
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(report.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(report.title)}</h1>", "<dl>",
        *(f"<dt>{esc(name)}</dt><dd>{esc(value)}</dd>" for name, value in report.facts),
        "</dl>",
    ]
    for figure in report.figures:
        data = base64.b64encode(figure.png).decode("ascii")
        parts.append(f'<figure id="{esc(figure.name)}"><figcaption>{esc(figure.title)}</figcaption>'
                     f'<img class="plot" alt="{esc(figure.title)}" src="data:image/png;base64,{data}"></figure>')
    for table in report.tables:
        parts.append(f"<h2>{esc(table.title)}</h2>")
        if table.note:
            parts.append(f'<p class="note">{esc(table.note)}</p>')
        parts.append("<table><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in table.headers) + "</tr></thead>")
        parts.append("<tbody>" + "".join(
            "<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>" for row in table.rows
        ) + "</tbody></table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(run_dir: str | Path, *, format: ReportFormat = "md", out: str | Path | None = None) -> str:
    """Render the report of `run_dir`; written to `out` when given (Markdown plots as PNG files beside it).

    Returns the rendered text. Raises RunError when `run_dir` is not a run folder.
    """
    config, rows = load_rows(run_dir)
    target = Path(out) if out is not None else None
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
    if format == "html":
        text = render_html(build_report(config, rows))
    else:
        report = build_report(config, rows, with_figures=target is not None)
        images: dict[str, str] = {}
        if target is not None:
            for figure in report.figures:
                image = target.with_name(f"{target.stem}_{figure.name}.png")
                image.write_bytes(figure.png)
                images[figure.name] = image.name
        text = render_markdown(report, images=images)
    if target is not None:
        target.write_text(text, encoding="utf-8")
    return text
