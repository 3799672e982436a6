"""The viewer works offline from a wheel: every template and asset it serves is declared as package data."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_template_and_asset_ships_in_the_wheel():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "occusim.viewer" in config["packages"]
    folder = REPO / config["package-dir"]["occusim.viewer"]
    patterns = config["package-data"]["occusim.viewer"]
    served = [path.relative_to(folder) for sub in ("templates", "static") for path in (folder / sub).rglob("*")
              if path.is_file()]

    assert len(served) >= 6
    missing = [str(path) for path in served if not any(fnmatch.fnmatch(path.as_posix(), pattern) for pattern in patterns)]
    assert not missing, f"add these to [tool.setuptools.package-data] occusim.viewer: {missing}"
