"""From labels to exemplars: the judge's disagreements with labelled episodes, turned into exemplars for their tasks."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from occusim.environments import EpisodeRecord, Exemplar, Task

from ._labels import LabelComparison, LabeledEpisode

# An exemplar is shown in every judge prompt of its task, so it stays a short excerpt of its episode.
CALL_LIMIT = 240
FACTS_LIMIT = 2400
ANSWER_LIMIT = 2000


def without_exemplars(task: Task) -> Task:
    """A copy of `task` whose rubric shows the judge no exemplars."""
    return task.model_copy(update={"rubric": task.rubric.model_copy(update={"exemplars": []})})


def episode_excerpt(record: EpisodeRecord) -> str:
    """The trajectory facts (each call and what it returned, cut short) and the final answer of `record`."""
    facts: list[str] = []
    used = 0
    for step in record.steps:
        line = f"{step.index}. {step.tool}({_compact(step.arguments)}) -> {_compact(step.observation)}"
        line = _cut(line, CALL_LIMIT)
        if used + len(line) > FACTS_LIMIT:
            facts.append(f"... {len(record.steps) - step.index} more call(s)")
            break
        facts.append(line)
        used += len(line)
    answer = record.final_answer if record.final_answer is not None else "(none submitted)"
    return "Trajectory facts:\n" + ("\n".join(facts) or "(no tool calls)") + "\nFinal answer: " + _cut(
        answer, ANSWER_LIMIT
    )


def disagreement_exemplars(
    comparisons: Iterable[LabelComparison], labelled: dict[int, LabeledEpisode]
) -> dict[str, list[Exemplar]]:
    """One exemplar per llm item or check label the judge got wrong, by task id, carrying the label's verdict.

    Deterministic items and whole-task labels are left out: an exemplar cannot change how they are decided.
    `labelled` maps a labels-file line to its episode.
    """
    out: dict[str, list[Exemplar]] = {}
    for comparison in comparisons:
        if comparison.judge is None or comparison.judge == comparison.expert:
            continue
        if comparison.deterministic or comparison.level == "task":
            continue
        entry = labelled[comparison.line]
        verdict = "passes" if comparison.expert else "fails"
        explanation = entry.note.strip() if entry.note and entry.note.strip() else (
            f"The labeller {verdict} this; a judge had decided the opposite"
            + (f" ({_cut(comparison.reason, 400)})." if comparison.reason else ".")
        )
        exemplar = Exemplar(
            item_id=comparison.key.split("#", 1)[0],
            excerpt=episode_excerpt(entry.trajectory),
            passed=comparison.expert,
            explanation=explanation,
        )
        found = out.setdefault(comparison.task_id, [])
        if exemplar not in found:
            found.append(exemplar)
    return out


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
