"""The wheel's package configuration: every folder that Python would import as a package and that ships is
listed (setuptools warns "Package would be ignored" about each one left out), and litellm is imported offline."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _folder(package: str, package_dir: dict[str, str]) -> Path:
    """Where setuptools looks for `package`: its own mapping, else its nearest mapped parent's folder."""
    parts = package.split(".")
    for cut in range(len(parts), 0, -1):
        mapped = package_dir.get(".".join(parts[:cut]))
        if mapped is not None:
            return ROOT / mapped / Path(*parts[cut:])
    return ROOT / Path(*parts)


def test_every_importable_folder_of_a_listed_package_is_listed_too():
    config = _setuptools()
    listed = set(config["packages"])
    missing = []
    for package in sorted(listed):
        folder = _folder(package, config["package-dir"])
        assert folder.is_dir(), package
        for child in folder.iterdir():
            shipped = child.is_dir() and child.name.isidentifier() and child.name != "__pycache__"
            if shipped and any(path.is_file() for path in child.rglob("*") if "__pycache__" not in path.parts):
                if f"{package}.{child.name}" not in listed:
                    missing.append(f"{package}.{child.name}")
    assert missing == []


def test_importing_litellm_after_occusim_reads_the_bundled_price_map_without_a_fetch():
    environment = {name: value for name, value in os.environ.items() if name != "LITELLM_LOCAL_MODEL_COST_MAP"}
    code = "import occusim, os, litellm; print(os.environ['LITELLM_LOCAL_MODEL_COST_MAP'])"
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True,
                          timeout=300, check=True)

    assert done.stdout.strip() == "True"
    assert "cost map" not in done.stderr
