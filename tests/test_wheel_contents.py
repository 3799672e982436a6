"""The built wheel holds the product and nothing else: no test helper, no test, every declared package."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(REPO)], check=True, capture_output=True)
    (wheel,) = out.glob("occusim-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@pytest.fixture(scope="module")
def wheel_names(wheel_files: dict[str, bytes]) -> list[str]:
    return list(wheel_files)


def test_the_wheel_holds_every_declared_package(wheel_names):
    packages = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    # A data folder (the catalog, the migrations, the viewer's pages) is a namespace package: no __init__.py,
    # only its files.
    missing = [name for name in packages if not any(file.startswith(f"{name.replace('.', '/')}/")
                                                    for file in wheel_names)]
    assert not missing, f"declared packages missing from the wheel: {missing}"


def test_the_wheel_holds_no_test_helpers(wheel_names):
    modules = [name for name in wheel_names if name.endswith((".py", ".pyi"))]
    assert all(name.startswith("occusim/") for name in modules), [n for n in modules if not n.startswith("occusim/")]
    helpers = [name for name in modules
               if name.startswith(("occusim/testing/", "occusim/tests/")) or "/helpers/" in name
               or Path(name).name.startswith(("test_", "conftest"))]
    assert not helpers, f"test code in the wheel: {helpers}"


def test_no_shipped_module_imports_the_test_helpers(wheel_files):
    """A module of the wheel that imported `tests.helpers` would fail once installed without the checkout."""
    offending = [name for name, data in wheel_files.items()
                 if name.endswith(".py") and (b"tests.helpers" in data or b"occusim.testing" in data)]
    assert not offending, offending
