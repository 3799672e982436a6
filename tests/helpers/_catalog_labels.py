"""Author labels over the bundled catalog, for testing the labelling mechanism: final answers written to
pass, to nearly pass and to fail by the catalog's author, each labelled by that author and given the
trajectory of the task's reference solution. They were written with the tasks and their exemplars by the
same hand, so agreement with them measures the mechanism (labels reach the judge, exemplars change its
verdicts), not how well a judge is calibrated; that needs labels by reviewers independent of the tasks.

`python -m tests.helpers._catalog_labels ANSWERS.yaml LABELS.jsonl` writes the labels file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from occusim.environments import (
    Catalog,
    EpisodeRecord,
    StepRecord,
    Task,
    apply_json_patch,
    load_catalog,
    load_yaml,
)
from occusim.environments import state_hash as hash_state
from occusim.judge import LabeledEpisode

EXPERT = "catalog-author"  # not an independent reviewer: see the module docstring
PASS_NOTE = "Written to pass: it gives the facts and the reasoning the item asks for."
FAIL_NOTE = "Written to fail: the decision itself is wrong."


class LabelledAnswers(BaseModel):
    """One task's item and the three answers the catalog's author wrote and labelled for it."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    item: str
    # Written to pass, to nearly pass (with why it fails) and to fail.
    passing: str
    near: str
    near_note: str
    failing: str


def read_answers(path: str | Path) -> list[LabelledAnswers]:
    entries: Any = load_yaml(Path(path).read_text(encoding="utf-8"))
    return [
        LabelledAnswers(
            task_id=e["task_id"], item=e["item"], passing=e["pass"], near=e["near"], near_note=e["near_note"],
            failing=e["fail"],
        )
        for e in entries
    ]


def reference_episode(catalog: Catalog, task: Task, answer: str, episode_id: str) -> EpisodeRecord:
    """An episode that follows the task's reference solution step by step and submits `answer`."""
    initial = catalog.initial_state(task)
    state = initial
    steps = []
    for index, step in enumerate(task.reference_solution):
        state = apply_json_patch(state, step.state_patch)
        steps.append(
            StepRecord(
                index=index, tool=step.tool, arguments=step.arguments, observation=step.observation,
                state_patch=step.state_patch, state_hash=hash_state(state),
            )
        )
    return EpisodeRecord(
        id=episode_id, task_id=task.id, scenario_id=task.scenario or "", status="submitted", world_model="reference",
        initial_state=initial, state=state, steps=steps, final_answer=answer,
    )


def build_labels(answers: list[LabelledAnswers], catalog: Catalog | None = None) -> list[LabeledEpisode]:
    """Three labelled episodes per task: the passing, the near-miss and the failing answer."""
    catalog = catalog if catalog is not None else load_catalog()
    out = []
    for entry in answers:
        task = catalog.task(entry.task_id)
        for kind, answer, passed, note in (
            ("pass", entry.passing, True, PASS_NOTE),
            ("near", entry.near, False, entry.near_note),
            ("fail", entry.failing, False, FAIL_NOTE),
        ):
            record = reference_episode(catalog, task, answer, f"{entry.task_id.replace('/', '--')}--{kind}")
            out.append(
                LabeledEpisode(
                    task_id=task.id, trajectory=record, labels={entry.item: passed}, expert=EXPERT, note=note
                )
            )
    return out


def labels_jsonl(labels: list[LabeledEpisode]) -> str:
    return "".join(
        json.dumps(label.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False, sort_keys=True) + "\n"
        for label in labels
    )


if __name__ == "__main__":
    source, target = sys.argv[1:3]
    Path(target).write_text(labels_jsonl(build_labels(read_answers(source))), encoding="utf-8")
