"""Load scenarios from YAML files, folders, the bundled catalog and `occubench:PATH` sources."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ._catalog import Catalog
from ._errors import ScenarioError, ScenarioErrors
from ._occubench import OCCUBENCH_PREFIX, load_occubench
from ._parse import parse_scenario
from ._scenario import Scenario
from ._yaml_load import YamlLoadError, load_yaml, not_utf8

BUNDLED_CATALOG = Path(__file__).parent / "catalog"
SCENARIO_SUFFIXES = (".yaml", ".yml")


def display_path(path: Path | str) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    path = Path(path)
    try:
        return os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)
    except ValueError:
        return str(path)


def load_scenario_file(path: Path | str) -> Scenario:
    """Read and validate one scenario YAML file."""
    source = display_path(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ScenarioErrors([ScenarioError(source, "", f"cannot read file: {error.strerror or error}")]) from None
    except UnicodeDecodeError as error:
        raise ScenarioErrors([ScenarioError(source, "", not_utf8(error))]) from None
    try:
        data = load_yaml(text)
    except YamlLoadError as error:
        raise ScenarioErrors([ScenarioError(source, error.where, error.message)]) from None
    return parse_scenario(data, source)


def scenario_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*") if p.suffix in SCENARIO_SUFFIXES and p.is_file())


def load_source(spec: str | Path) -> list[tuple[Scenario, str]]:
    """Load one source: a YAML file, a folder of them, or `occubench:PATH`. Returns (scenario, origin) pairs."""
    spec = str(spec)
    if spec.startswith(OCCUBENCH_PREFIX):
        return load_occubench(spec[len(OCCUBENCH_PREFIX) :])
    root = Path(spec)
    if not root.exists():
        raise ScenarioErrors([ScenarioError(spec, "", "no such file or folder")])
    errors: list[ScenarioError] = []
    loaded: list[tuple[Scenario, str]] = []
    files = scenario_files(root)
    if not files:
        raise ScenarioErrors([ScenarioError(spec, "", "no scenario files (*.yaml) found")])
    for path in files:
        try:
            loaded.append((load_scenario_file(path), display_path(path)))
        except ScenarioErrors as error:
            errors.extend(error.errors)
    if errors:
        raise ScenarioErrors(errors)
    return loaded


def bundled_may_match(selector: str | None) -> bool:
    """Whether the task selector (as `Catalog.select` reads it) can pick a bundled task, told from the
    catalog's file layout (`<category-slug>/<scenario-id>.yaml`, task ids `<scenario-id>/...`) without
    parsing it: False only when every pattern begins with a literal `NAME/` that no bundled scenario or
    category is named, such as `occubench/*`."""
    if not BUNDLED_CATALOG.is_dir():
        return False
    patterns = [p.strip() for p in (selector or "").split(",") if p.strip()]
    if not patterns:
        return True
    names = {path.stem for suffix in SCENARIO_SUFFIXES for path in BUNDLED_CATALOG.rglob(f"*{suffix}")}
    names |= {path.name for path in BUNDLED_CATALOG.iterdir() if path.is_dir()}
    for pattern in patterns:
        prefix, slash, _ = pattern.partition("/")
        if not slash or any(char in prefix for char in "*?[") or prefix in names:
            return True
    return False


def load_catalog(sources: Sequence[str | Path] = (), *, bundled: bool = True) -> Catalog:
    """Load the bundled catalog (unless `bundled=False`) and every source, keeping ids unique.

    Raises ScenarioErrors listing every problem found in every source.
    """
    catalog = Catalog()
    errors: list[ScenarioError] = []
    specs: list[str | Path] = [BUNDLED_CATALOG] if bundled and BUNDLED_CATALOG.is_dir() else []
    specs.extend(sources)
    for spec in specs:
        try:
            loaded = load_source(spec)
        except ScenarioErrors as error:
            errors.extend(error.errors)
            continue
        for scenario, origin in loaded:
            errors.extend(catalog.add(scenario, origin))
    if errors:
        raise ScenarioErrors(errors)
    return catalog
