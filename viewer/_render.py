"""The pages, rendered from the package's Jinja templates with every value escaped (episodes are untrusted)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from occusim.llm import sum_usage

from ._diff import pretty
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
                 limited: bool = False, blind: bool = False) -> str:
    """The list of episodes with the filter form; `query` holds the chosen filters. `blind` hides outcomes."""
    selection = Selection.from_query(query)
    return _environment().get_template("index.html").render(
        title="Episodes", base=base, source_title=source_title, shown=selection.apply(entries), total=len(entries),
        choices=filter_choices(entries, selection), limited=limited, blind=blind,
    )


def render_episode(detail: EpisodeDetail, *, base: str, source_title: str, labelling: LabelForm | None = None) -> str:
    """One episode: summary, usage and latency, the timeline, the final answer and the verdict; in labelling
    mode, the reviewer's form after the verdict."""
    record = detail.record
    steps = timeline(record) if record is not None else []
    usage = dict(detail.usage)
    if not usage and record is not None:
        usage["world_model"] = sum_usage(step.usage for step in record.steps)
        if detail.verdict is not None:
            usage["judge"] = detail.verdict.usage
    final_answer = record.final_answer if record is not None else detail.final_answer
    context: dict[str, Any] = {
        "title": f"Episode {detail.entry.episode_id}", "base": base, "source_title": source_title,
        "detail": detail, "steps": steps, "usage": usage,
        "latency_ms": sum(step.latency_ms for step in record.steps) if record is not None else 0.0,
        "initial_state": pretty(record.initial_state) if record is not None else "",
        "final_answer": final_answer, "labelling": labelling,
    }
    return _environment().get_template("episode.html").render(context)

