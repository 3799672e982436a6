"""A run's report: tables and plots as Markdown, or as one self-contained HTML file."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import quote

from occusim.environments import Usage

from ._audit_rates import AuditRate, audit_rates
from ._metrics import (
    FAULT_ORDER,
    LEVEL_OF,
    ROLES,
    Rate,
    Robustness,
    RunMetrics,
    Share,
    compute_metrics,
    fault_sorted,
    rates_by,
)
from ._plots import Figure, figures
from ._resampling import Interval
from ._results import ResultRow, RunConfig, load_rows

ReportFormat = Literal["md", "html"]

# `occusim view RUN_DIR` serves RUN_DIR/report.html at /report, so the HTML's relative links open its pages
# there; Markdown is read elsewhere, so it links to the address `occusim view` listens on by default.
VIEWER_URL = "http://127.0.0.1:7580/"
VIEWER_NOTE = ("`occusim view RUN_DIR` serves this report at /report when it is written as RUN_DIR/report.html "
               "(`occusim report RUN_DIR --format html --out RUN_DIR/report.html`); the episode links open there.")


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]
    note: str = ""
    links: list[str | None] = field(default_factory=list)  # per row: the viewer path its last cell links to


@dataclass
class Report:
    """Everything a report shows, independent of the output format."""

    title: str
    facts: list[tuple[str, str]]
    tables: list[Table]
    figures: list[Figure] = field(default_factory=list)


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _interval(ci: Interval | None, spec: str = ".1%") -> str:
    return "n/a" if ci is None else f"[{ci.low:{spec}}, {ci.high:{spec}}]"


def _rate(rate: Rate) -> list[str]:
    return [f"{rate.passed}/{rate.total}", _percent(rate.rate), _interval(rate.ci)]


def _share(share: Share) -> str:
    return f"{share.count}/{share.total} ({_percent(share.rate)}, 95 % CI {_interval(share.ci)})"


def _cell(rate: Rate | None) -> str:
    if rate is None:
        return "-"
    return f"{rate.passed}/{rate.total} {_percent(rate.rate)} {_interval(rate.ci)}"


def cost_text(usage: Usage) -> str:
    """A role's cost, written the same way for every role: nothing spent without a call, and "not priced"
    only for calls whose model has no listed price."""
    if usage.calls == 0:
        return "$0.0000 (no call)"
    return "not priced" if usage.cost_usd is None else f"${usage.cost_usd:.4f}"


def _usage_row(role: str, usage: Usage) -> list[str]:
    cost = cost_text(usage)
    return [role, f"{usage.calls:,}", f"{usage.cached_calls:,}", f"{usage.prompt_tokens:,}",
            f"{usage.completion_tokens:,}", cost]


def _robustness(value: Robustness) -> str:
    if value.value is None:
        return value.note
    label = " (partial)" if value.partial else ""
    return f"{value.value:.3f}{label}, 95 % CI {_interval(value.ci, '.3f')} - {value.note}"


def _provenance(config: RunConfig) -> list[tuple[str, str]]:
    provenance = config.provenance
    if provenance is None:
        return [("Provenance", "not recorded (written by an older occusim)")]
    facts = [("Protocol", provenance.protocol), ("occusim version", provenance.occusim_version or "unknown"),
             ("Prompt versions", ", ".join(f"{role} {version}" for role, version in provenance.prompt_versions.items())
              or "unknown")]
    if provenance.harness_files:
        facts.append(("Harness files", ", ".join(f"{path} {digest[:12]}"
                                                  for path, digest in provenance.harness_files.items())))
    return facts


def build_report(config: RunConfig, rows: list[ResultRow], *, with_figures: bool = True) -> Report:
    metrics = compute_metrics(rows)
    judge = metrics.judge
    facts = [
        ("Agent model", config.agent_model),
        ("World model", config.world_model),
        ("Judge model", f"{config.judge_model} ({config.judge_votes} votes)"),
        *_provenance(config),
        ("Tasks", config.tasks),
        ("Fault modes", f"{', '.join(config.faults)} (count {config.fault_count}, duration {config.fault_duration})"),
        ("Trials", f"{config.trials} (seeds {config.seed}..{config.seed + config.trials - 1})"),
        ("Transport", config.transport),
        ("Episodes", f"{metrics.episodes} ({metrics.scored} scored, {metrics.unjudged} unjudged, "
                     f"{metrics.infra_errors} infrastructure errors)"),
        ("Completion rate", f"{_percent(metrics.completion.rate)} ({metrics.completion.passed}/"
                            f"{metrics.completion.total}), 95 % CI {_interval(metrics.completion.ci)}"),
        ("Mean score", "n/a" if metrics.mean_score is None else f"{metrics.mean_score:.3f}"),
        ("Robustness", _robustness(metrics.robustness)),
        ("Judge abstentions", f"{_share(judge.abstentions)} of votes; "
                              f"{judge.episodes_with_abstentions} episode(s) with at least one"),
        ("Judge ties", f"{_share(judge.ties)} of llm checks"),
        ("Simulator error rate", f"{_percent(metrics.simulator_error_rate)} ({metrics.simulator_error_steps} of "
                                 f"{metrics.steps} steps), 95 % CI {_interval(metrics.simulator_error_ci)}"),
    ]
    modes = fault_sorted({mode for cells in metrics.by_category_and_mode.values() for mode in cells})
    tables = [
        Table("Completion by fault mode", ["Fault mode", "Passed", "Rate", "95 % CI"],
              [[mode, *_rate(rate)] for mode, rate in metrics.by_fault_mode.items()],
              note="All scored episodes of each mode. 95 % CI: bootstrap over tasks; see docs/metrics.md."),
        _robustness_table(metrics.robustness),
        Table("Completion by category and fault mode", ["Category", *modes],
              [[name, *(_cell(cells.get(mode)) for mode in modes)]
               for name, cells in metrics.by_category_and_mode.items()],
              note="Each cell: passed/scored, rate, 95 % CI."),
        Table("Completion by category (all fault modes pooled)", ["Category", "Passed", "Rate", "95 % CI"],
              [[name, *_rate(rate)] for name, rate in metrics.by_category.items()]),
        Table("Completion by difficulty (all fault modes pooled)", ["Difficulty", "Passed", "Rate", "95 % CI"],
              [[str(level), *_rate(rate)] for level, rate in metrics.by_difficulty.items()]),
        Table("pass@k and pass^k", ["k", "pass@k", "pass@k 95 % CI", "pass^k", "pass^k 95 % CI"],
              [[str(k), f"{metrics.pass_at_k[k]:.3f}", _interval(metrics.pass_at_k_ci.get(k), ".3f"),
                f"{metrics.pass_hat_k[k]:.3f}", _interval(metrics.pass_hat_k_ci.get(k), ".3f")]
               for k in metrics.pass_at_k],
              note="Unbiased estimators per (task, fault mode), averaged; see docs/metrics.md."),
        _faults_table(metrics),
        Table("Tokens and cost by role", ["Role", "Calls", "Cached", "Prompt tokens", "Completion tokens", "Cost"],
              [_usage_row(role, metrics.usage_by_role[role]) for role in ROLES],
              note="Includes the attempts that ended in infrastructure errors; a model without a listed price "
                   "(litellm's price map) is not priced."),
        _audit_table(rows),
        _task_table(rows),
        _episode_table(rows),
    ]
    for title, messages in (("Unjudged episodes (the judge could not decide; not counted as agent failures)",
                             metrics.unjudged_messages),
                            ("Infrastructure errors (not counted as agent failures)", metrics.infra_error_messages)):
        if messages:
            tables.append(Table(title, ["Episode", "Error"],
                                [[message.split(": ", 1)[0], message.split(": ", 1)[1]] for message in messages]))
    return Report("occusim run report", facts, tables, figures(metrics) if with_figures else [])


def _robustness_table(value: Robustness) -> Table:
    rows = [[mode, f"{rate:.1%}", LEVEL_OF[mode]] for mode, rate in value.rates.items()]
    note = (f"Over the {value.tasks} task(s) scored in E0 and in every faulted mode; each task weighs the same."
            + (f" Partial: no scored {', '.join(value.missing)}." if value.partial else "")
            + (f" Left out: {value.unfaulted_left_out} faulted-mode episode(s) that met none of their faults."
               if value.unfaulted_left_out else ""))
    return Table("Robustness (paired)", ["Fault mode", "Completion over the paired tasks", "Level"], rows, note=note)


def _faults_table(metrics: RunMetrics) -> Table:
    rows = []
    for mode, met in metrics.faults_met.items():
        mean = "n/a" if met.mean is None else f"{met.mean:.2f} {met.counted}"
        rows.append([mode, str(met.episodes), "n/a" if met.met_all is None else str(met.met_all), mean,
                     "n/a" if met.short is None else _share(met.short), str(met.too_short), str(met.not_applicable)])
    return Table("Faults met per episode", ["Fault mode", "Scored episodes", "Met every fault", "Mean met",
                                            "Met fewer than planned", "Too short", "Faults not applicable"],
                 rows, note="Too short: the episode ended before a fault was due. Not applicable: a due implicit "
                            "fault found nothing to degrade in any later answer. Robustness leaves out the episodes "
                            "that met no fault. Rows that do not record faults met count the calls a fault hit "
                            "instead.")


def _audit_table(rows: list[ResultRow]) -> Table:
    body = []
    for label, key in (("world model", lambda row: row.world_model), ("scenario", lambda row: row.scenario_id)):
        for name, rate in audit_rates(rows, key).items():
            body.append([f"{label}: {name}", str(rate.steps), str(rate.flagged_steps), _per_100(rate),
                         ", ".join(f"{kind} {count}" for kind, count in rate.by_kind.most_common()) or "-"])
    return Table("Simulator audit (flags per 100 steps)", ["Group", "Steps", "Flagged steps", "Flags per 100 steps",
                                                          "Flags by kind"], body,
                 note="Cheap per-step checks of the world model's answers (no model call); see docs/metrics.md. "
                      "History mode tracks no state, so its steps get only the checks that need none.")


def _per_100(rate: AuditRate) -> str:
    if rate.per_100_steps is None:
        return "not audited (OccuBench protocol)" if rate.unaudited else "n/a"
    figure = f"{rate.per_100_steps:.1f}"
    if rate.skipped == rate.steps:
        return f"{figure}; state checks not audited (history mode)"
    if rate.skipped:
        return f"{figure} ({rate.skipped} steps in history mode, without the state checks)"
    return figure


def _task_table(rows: list[ResultRow]) -> Table:
    modes = fault_sorted({row.fault_mode for row in rows})
    cells: dict[tuple[str, str], Rate] = rates_by([row for row in rows if row.scored],
                                                  lambda row: (row.task_id, row.fault_mode), interval=False)
    body = [[task, *(f"{cells[task, m].passed}/{cells[task, m].total}" if (task, m) in cells else "-"
                     for m in modes)] for task in sorted({task for task, _ in cells})]
    return Table("Passed trials by task", ["Task", *modes], body)


def _episode_table(rows: list[ResultRow]) -> Table:
    listed = sorted(rows, key=lambda row: (row.task_id, FAULT_ORDER.index(row.fault_mode), row.trial))
    return Table("Episodes", ["Task", "Fault mode", "Trial", "Outcome", "Score", "Episode"],
                 [[row.task_id, row.fault_mode, str(row.trial), _outcome(row),
                   "-" if row.score is None else f"{row.score:.2f}", row.episode_id or "never started"]
                  for row in listed],
                 note="Each episode's id opens its page in the viewer (see Viewer above).",
                 links=[None if row.episode_id is None else f"episodes/{quote(row.episode_id, safe='')}"
                        for row in listed])


def _outcome(row: ResultRow) -> str:
    if row.status != "ok":
        return row.status.replace("_", " ")
    return "passed" if row.passed else "failed"


def _markdown_row(row: list[str], link: str | None) -> str:
    cells = [cell.replace("|", "\\|") for cell in row]
    if link is not None:
        cells[-1] = f"[{cells[-1]}]({VIEWER_URL}{link})"
    return "| " + " | ".join(cells) + " |"


def render_markdown(report: Report, *, images: dict[str, str] | None = None) -> str:
    """Markdown; `images` maps figure names to the relative paths written beside the file."""
    lines = [f"# {report.title}", ""]
    lines += [f"- **{name}:** {value}" for name, value in report.facts]
    lines += [f"- **Viewer:** [{VIEWER_URL}]({VIEWER_URL}) while `occusim view RUN_DIR` runs on its default port"]
    for figure in report.figures:
        if images and figure.name in images:
            lines += ["", f"![{figure.title}]({images[figure.name]})"]
            if figure.note:
                lines += ["", figure.note]
    for table in report.tables:
        lines += ["", f"## {table.title}", ""]
        if table.note:
            lines += [table.note, ""]
        lines.append("| " + " | ".join(table.headers) + " |")
        lines.append("|" + "|".join("---" for _ in table.headers) + "|")
        links = table.links or [None] * len(table.rows)
        lines += [_markdown_row(row, link) for row, link in zip(table.rows, links, strict=True)]
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
        '<dt>Viewer</dt><dd><a class="viewer" href="./">all episodes in the viewer</a> '
        f'<span class="note">{esc(VIEWER_NOTE)}</span></dd>',
        "</dl>",
    ]
    for figure in report.figures:
        data = base64.b64encode(figure.png).decode("ascii")
        note = f'<p class="note">{esc(figure.note)}</p>' if figure.note else ""
        parts.append(f'<figure id="{esc(figure.name)}"><figcaption>{esc(figure.title)}</figcaption>{note}'
                     f'<img class="plot" alt="{esc(figure.title)}" src="data:image/png;base64,{data}"></figure>')
    if not report.figures:
        parts.append('<p class="note">No chart: the run has no scored episode to draw.</p>')
    for table in report.tables:
        parts.append(f"<h2>{esc(table.title)}</h2>")
        if table.note:
            parts.append(f'<p class="note">{esc(table.note)}</p>')
        parts.append("<table><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in table.headers) + "</tr></thead>")
        links = table.links or [None] * len(table.rows)
        parts.append("<tbody>" + "".join(_html_row(row, link) for row, link in zip(table.rows, links, strict=True))
                     + "</tbody></table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _html_row(row: list[str], link: str | None) -> str:
    cells = [f"<td>{html.escape(cell)}</td>" for cell in row]
    if link is not None:
        cells[-1] = f'<td><a class="episode" href="{html.escape(link)}">{html.escape(row[-1])}</a></td>'
    return "<tr>" + "".join(cells) + "</tr>"


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
