"""Exemplar files beside the catalog: written per task, read back, merged into the tasks' rubrics."""

from __future__ import annotations

from pathlib import Path

import pytest

from occusim.environments import (
    Exemplar,
    ScenarioErrors,
    add_exemplars,
    load_catalog,
    read_exemplar_dir,
    write_exemplars,
)

TASK = "triage-nurse/low-acuity-resource-count"


def test_written_files_load_back_and_merge_into_the_rubric(tmp_path: Path) -> None:
    near = Exemplar(item_id="reasoning", excerpt="Final answer: ESI 3 for both.", passed=False, explanation="no")
    path, new = write_exemplars(tmp_path, TASK, [near])
    assert path == tmp_path / "triage-nurse__low-acuity-resource-count.yaml" and new == 1
    # Writing the same exemplar again adds nothing; a new one is appended after the ones kept.
    other = near.model_copy(update={"excerpt": "Final answer: ESI 5 for both.", "passed": True})
    assert write_exemplars(tmp_path, TASK, [near, other]) == (path, 1)
    [(source, entry)] = read_exemplar_dir(tmp_path)
    assert source == str(path) and entry.task_id == TASK and entry.exemplars == [near, other]

    catalog = load_catalog()
    before = list(catalog.task(TASK).rubric.exemplars)
    assert add_exemplars(catalog, tmp_path) == 2
    assert catalog.task(TASK).rubric.exemplars == [*before, near, other]
    # The scenario's copy of the task is the same object, so the server and the judge see the same rubric.
    assert catalog.scenario_of(TASK).tasks[0].rubric.exemplars[-1] == other
    assert add_exemplars(catalog, tmp_path) == 0


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("task_id: [\n", "cannot read it"),
        ("task_id: x\n", "exemplars: Field required"),
        ("task_id: x\nexemplars: []\n", "exemplars: List should have at least 1 item"),
        ("task_id: x\nexemplars:\n  - {excerpt: e}\n", "exemplars[0].passed: Field required"),
    ],
)
def test_unusable_files_name_the_file_and_the_field(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / "bad.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioErrors) as raised:
        read_exemplar_dir(tmp_path)
    assert str(tmp_path / "bad.yaml") in str(raised.value) and problem in str(raised.value)
