"""The pages, rendered from the package's Jinja templates with every value escaped (episodes are untrusted)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from occusim.environments import Usage
from occusim.llm import sum_usage

from ._conversation import conversation
from ._diff import pretty, side_by_side
from ._filters import Selection, filter_choices
from ._labelling import LabelForm
from ._models import EpisodeDetail, EpisodeEntry
from ._timeline import timeline

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"


@functools.cache
def _environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    )


def render_index(entries: list[EpisodeEntry], query: dict[str, str], *, base: str, source_title: str,
                 limited: bool = False, report_href: str | None = None, blind: bool = False) -> str:
    """The list of episodes with the filter form; `query` holds the chosen filters. `blind` hides outcomes (the
    run's pass counts included)."""
    selection = Selection.from_query(query)
    return _environment().get_template("index.html").render(
        title="Episodes", base=base, source_title=source_title, shown=selection.apply(entries), total=len(entries),
        choices=filter_choices(entries, selection), limited=limited, blind=blind,
        summary=f"{len(entries)} episode(s)." if blind else run_summary(entries),
        faults_met=faults_met, report_href=report_href,
    )


def run_summary(entries: list[EpisodeEntry]) -> str:
    """One line on every listed episode: how many passed, failed, went unjudged or failed to run."""
    passed = sum(1 for entry in entries if entry.passed is True)
    failed = sum(1 for entry in entries if entry.passed is False)
    infra = sum(1 for entry in entries if entry.status == "infra_error")
    other = len(entries) - passed - failed - infra
    parts = [f"{passed} passed", f"{failed} failed"]
    if other:
        parts.append(f"{other} not judged")
    if infra:
        parts.append(f"{infra} infrastructure error(s), not counted against the agent")
    rate = f"; pass rate {passed / (passed + failed):.0%} of the judged" if passed + failed else ""
    return f"{len(entries)} episode(s): {', '.join(parts)}{rate}."


def faults_met(entry: EpisodeEntry) -> str:
    """ "m of n" planned faults met; the faulted calls' count where the plan is not known."""
    if entry.faults_planned is not None:
        return f"{entry.faults_met or 0} of {entry.faults_planned}"
    return f"{len(entry.faults)} call(s)" if entry.faults else "-"


def render_episode(detail: EpisodeDetail, *, base: str, source_title: str, labelling: LabelForm | None = None) -> str:
    """One episode: a summary of its story, usage and latency, the timeline with what the agent said, the final
    state, the final answer and the verdict; in labelling mode, the reviewer's form after the verdict."""
    record = detail.record
    steps = timeline(record) if record is not None else []
    usage = dict(detail.usage)
    if not usage and record is not None:
        usage["world_model"] = sum_usage(step.usage for step in record.steps)
        if detail.verdict is not None:
            usage["judge"] = detail.verdict.usage
    final_answer = record.final_answer if record is not None else detail.final_answer
    talk = conversation(detail.messages, record.steps if record is not None else [])
    # A protocol that tracks no state records no patch, so its final state is its initial one: "unchanged".
    changed = record is not None and record.state != record.initial_state
    context: dict[str, Any] = {
        "title": f"Episode {detail.entry.episode_id}", "base": base, "source_title": source_title,
        "detail": detail, "steps": steps, "usage": usage, "talk": talk,
        "instruction": detail.instruction or talk.task_text,
        "faults": faults_text(detail),
        "judge_model": detail.entry.judge_model or (detail.verdict.judge_model if detail.verdict else "") or "",
        "total_cost": total_cost(usage),
        "latency_ms": sum(step.latency_ms for step in record.steps) if record is not None else 0.0,
        "initial_state": pretty(record.initial_state) if record is not None else "",
        "final_state": pretty(record.state) if changed and record is not None else None,
        "state_changes": side_by_side(record.initial_state, record.state) if changed and record is not None else [],
        "final_answer": final_answer, "labelling": labelling,
    }
    return _environment().get_template("episode.html").render(context)


def faults_text(detail: EpisodeDetail) -> str:
    """The fault mode and how many of its planned faults the episode met: a planned fault is never shown as met."""
    entry, record = detail.entry, detail.record
    settings = f" (duration {record.faults.duration}, seed {record.faults.seed})" if record is not None else ""
    if entry.fault_mode in ("E0", "prompt") and not entry.faults_planned:
        return f"{entry.fault_mode}: no fault planned by the server" + (
            "; the world model was asked to inject them" if entry.fault_mode == "prompt" else "")
    if entry.faults_planned is None:
        return f"{entry.fault_mode}: {len(entry.faults)} faulted call(s){settings}"
    return f"{entry.fault_mode}: {entry.faults_met or 0} of {entry.faults_planned} planned fault(s) met{settings}"


def total_cost(usage: dict[str, Usage]) -> str:
    """The cost of every role together, or why it is not known (a role's model has no listed price)."""
    unpriced = [role.replace("_", " ") for role, spent in usage.items() if spent.calls and spent.cost_usd is None]
    known = sum(spent.cost_usd or 0.0 for spent in usage.values())
    if unpriced:
        return f"${known:.4f} and not priced: {', '.join(unpriced)}"
    return f"${known:.4f}"
