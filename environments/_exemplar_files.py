"""Judge exemplars kept outside the scenario files: one YAML file per task, merged into its rubric on load.

A team turns its own reviewers' labels into exemplars (`occusim judge-agreement --write-exemplars DIR`)
and judges with them (`--exemplars DIR`) without editing the scenarios.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._catalog import Catalog
from ._errors import ScenarioError, ScenarioErrors, format_location
from ._rubric import Exemplar
from ._task import TASK_ID
from ._yaml import dump_yaml
from ._yaml_load import YamlLoadError, load_yaml


class TaskExemplars(BaseModel):
    """The file format: the exemplars of one task."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(pattern=TASK_ID)
    exemplars: list[Exemplar] = Field(min_length=1)


def exemplar_file_name(task_id: str) -> str:
    """One flat file per task: `scenario/task` is written `scenario__task.yaml`."""
    return task_id.replace("/", "__") + ".yaml"


def read_exemplar_dir(directory: str | Path) -> list[tuple[str, TaskExemplars]]:
    """Every `*.yaml` file of `directory` (not recursive), with its path; raises ScenarioErrors."""
    folder = Path(directory)
    if not folder.is_dir():
        raise ScenarioErrors([ScenarioError(str(folder), "", "no such folder of exemplar files")])
    out: list[tuple[str, TaskExemplars]] = []
    errors: list[ScenarioError] = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            data = load_yaml(path.read_text(encoding="utf-8"))
            out.append((str(path), TaskExemplars.model_validate(data)))
        except (OSError, UnicodeDecodeError, YamlLoadError) as error:
            errors.append(ScenarioError(str(path), "", f"cannot read it: {error}"))
        except ValidationError as error:
            errors.extend(
                ScenarioError(str(path), format_location(detail["loc"]), detail["msg"])
                for detail in error.errors(include_url=False)
            )
    if errors:
        raise ScenarioErrors(errors)
    return out


def add_exemplars(catalog: Catalog, directory: str | Path) -> int:
    """Append the exemplars of `directory` to the rubrics of their tasks; returns how many were added.

    Raises ScenarioErrors when a file names a task the catalog lacks or an item its task lacks.
    """
    files = read_exemplar_dir(directory)
    errors: list[ScenarioError] = []
    for path, entry in files:
        task = catalog.tasks.get(entry.task_id)
        if task is None:
            errors.append(ScenarioError(path, "task_id", f"no loaded task {entry.task_id!r}"))
            continue
        items = {item.id for item in task.rubric.items}
        errors.extend(
            ScenarioError(path, f"exemplars[{index}].item_id", f"task {task.id!r} has no rubric item {e.item_id!r}")
            for index, e in enumerate(entry.exemplars)
            if e.item_id is not None and e.item_id not in items
        )
    if errors:
        raise ScenarioErrors(errors)
    added = 0
    for _, entry in files:
        # The task object is shared by the catalog's task index and its scenario, so both see the change.
        rubric = catalog.tasks[entry.task_id].rubric
        new = [e for e in entry.exemplars if e not in rubric.exemplars]
        rubric.exemplars.extend(new)
        added += len(new)
    return added


def write_exemplars(directory: str | Path, task_id: str, exemplars: list[Exemplar]) -> tuple[Path, int]:
    """Add `exemplars` to the task's file in `directory` (created if needed), skipping ones it holds.

    Returns the file and how many exemplars were new.
    """
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / exemplar_file_name(task_id)
    kept: list[Exemplar] = []
    if path.exists():
        data = load_yaml(path.read_text(encoding="utf-8"))
        kept = TaskExemplars.model_validate(data).exemplars
    new = [e for e in exemplars if e not in kept]
    if new:
        document = TaskExemplars(task_id=task_id, exemplars=[*kept, *new])
        path.write_text(dump_yaml(document.model_dump(mode="json")), encoding="utf-8")
    return path, len(new)
