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
    missing, served = [], 0
    for sub in ("templates", "static"):
        package = f"occusim.viewer.{sub}"  # a data folder is a package of its own, with its files as its data
        assert package in config["packages"]
        patterns = config["package-data"][package]
        for path in (folder / sub).rglob("*"):
            if path.is_file():
                served += 1
                if not any(fnmatch.fnmatch(path.relative_to(folder / sub).as_posix(), pattern) for pattern in patterns):
                    missing.append(str(path.relative_to(folder)))

    assert served >= 6
    assert not missing, f"add these to [tool.setuptools.package-data]: {missing}"
