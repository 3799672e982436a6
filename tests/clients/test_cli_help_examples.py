"""Every task, scenario and category the `--help` examples name exists in the bundled catalog."""

from __future__ import annotations

import importlib
import shlex

import pytest

from occusim.clients.cli import COMMANDS, EPILOG
from occusim.environments import category_slug, load_catalog

EPILOGS = {"occusim": EPILOG} | {
    name: getattr(importlib.import_module(module), "EPILOG", "") for name, (module, _) in COMMANDS.items()
}


def examples() -> list[tuple[str, str, str]]:
    """(command, kind, value) for each selector, served task and category in the examples."""
    found = []
    for command, text in EPILOGS.items():
        for line in text.replace("\\\n", " ").splitlines():
            words = shlex.split(line.strip()) if line.strip().startswith("occusim") else []
            for index, word in enumerate(words[:-1]):
                value = words[index + 1]
                if value.startswith("-"):
                    continue
                if word == "--tasks":
                    found.append((command, "selector", value))
                elif word == "--category":
                    found.append((command, "category", value))
                elif word == "serve" and index == 1:
                    found.append((command, "task", value))
    return found


def test_the_examples_name_tasks_at_all():
    kinds = {kind for _, kind, _ in examples()}
    assert kinds == {"selector", "category", "task"}
    assert ("occusim", "task", "emergency-dispatcher/chest-pain-delta") in examples()


@pytest.mark.parametrize(("command", "kind", "value"), examples())
def test_each_example_names_what_the_catalog_holds(command: str, kind: str, value: str):
    catalog = load_catalog()
    if kind == "selector":
        assert catalog.select_each(value)
    elif kind == "category":
        assert value in {category_slug(scenario.category) for scenario in catalog.scenarios.values()}
    else:
        assert catalog.task(value).id == value
