"""The import graph of occusim's own modules, read from the source: no cycles, not even through imports made
inside functions, and packages import only those below them."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "occusim"
# A package may import one on a lower level, or on its own level (llm reads environments' Usage). `rest` is
# the REST layer the services share; `analysis` (what a run wrote: metrics, reports, export, comparison) and
# `viewer` (the episode pages) need no simulation; `server` is the simulation engine, `service` the hosted
# service built on it, and `clients` (agents, the batch runner, the CLI) drive both; `occubench`
# (OccuBench's protocol) builds on the clients' agent and the server's episodes, and the clients find it by
# name (`PROTOCOLS`); `rl` (adapters for RL frameworks) drives episodes the way the clients do.
LEVELS = {"environments": 0, "llm": 0, "rest": 1, "judge": 2, "analysis": 3, "viewer": 3, "server": 4,
          "service": 5, "clients": 6, "occubench": 7, "rl": 7}


def _modules() -> dict[str, Path]:
    """Every occusim module and its file, named as Python imports it."""
    found = {"occusim": ROOT / "__init__.py", "occusim.__main__": ROOT / "__main__.py"}
    for package in sorted(LEVELS):
        folder = ROOT / package
        if not folder.is_dir():
            continue  # a package this checkout does not have yet
        for path in sorted(folder.rglob("*.py")):
            parts = ["occusim", package, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The occusim modules `name` imports anywhere in its file: at the top, in functions, for typing."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            if node.level:
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            for alias in node.names:
                # `from . import _prompts` imports a module; `from ._x import name` imports from one.
                submodule = f"{base}.{alias.name}"
                targets.add(submodule if submodule in modules else base)
    return {target for target in targets if target in modules and target != name}


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LEVELS else None


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_the_graph_holds_every_package(graph):
    assert {_package(name) for name in graph} - {None} == set(LEVELS)


def test_every_package_folder_has_a_level():
    """A new top-level package joins the layers here, or the graph would not see it."""
    linked = {path.name for path in ROOT.iterdir() if path.is_symlink() or (path / "__init__.py").is_file()}
    assert linked - {"__pycache__"} == set(LEVELS)


def test_imports_inside_functions_and_for_typing_count(tmp_path):
    source = tmp_path / "_probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import _a\n"
        "if TYPE_CHECKING:\n    from ._b import B\n"
        "def later():\n    from occusim.llm import complete\n    import occusim.judge\n"
    )
    modules = {name: source for name in ("occusim.server._a", "occusim.server._b", "occusim.llm", "occusim.judge")}

    found = _imports("occusim.server._probe", source, modules)

    assert found == {"occusim.server._a", "occusim.server._b", "occusim.llm", "occusim.judge"}


def test_no_module_imports_itself_back(graph):
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        cycle = error.args[1]
        pytest.fail("import cycle: " + " -> ".join(reversed(cycle)))


def test_packages_import_only_packages_below_them_through_their_public_api(graph):
    wrong = []
    for source, targets in graph.items():
        for target in sorted(targets):
            low, high = _package(target), _package(source)
            if low is None or high is None or low == high:
                continue
            if LEVELS[low] > LEVELS[high]:
                wrong.append(f"{source} imports {target}: {high} is below {low}")
            elif target != f"occusim.{low}":
                wrong.append(f"{source} imports {target}: import occusim.{low} (its __init__), not a private module")
    assert not wrong, "\n".join(wrong)


# What each job must do without: run analysis reads run folders (no MCP, no web framework); the engine
# simulates episodes and serves MCP over stdio (no web framework: that is the hosted service's).
FORBIDDEN = {"analysis": {"mcp", "fastapi", "starlette", "uvicorn"}, "server": {"fastapi", "starlette", "uvicorn"}}


def _distributions(path: Path) -> set[str]:
    """The top-level names of the absolute imports in a file, anywhere in it."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.partition(".")[0])
    return names


def test_each_package_keeps_to_its_job():
    wrong = []
    for name, path in _modules().items():
        package = _package(name)
        banned = FORBIDDEN.get(package or "", set()) & _distributions(path)
        if banned:
            wrong.append(f"{name} imports {sorted(banned)}, which the {package} package does without")
    assert not wrong, "\n".join(wrong)
