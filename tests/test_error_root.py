"""Every error occusim defines derives from `OccusimError`, and the CLI maps one by type to its exit code."""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

import pytest

from occusim.analysis import RunError
from occusim.clients.cli import COMMANDS, main
from occusim.environments import OccusimError, ScenarioErrors
from occusim.llm import ProviderError
from occusim.server import StoreError

ROOT = Path(__file__).resolve().parents[1] / "occusim"


def _product_modules() -> list[str]:
    names = []
    for package in sorted(link.name for link in ROOT.iterdir() if link.is_symlink()):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = ["occusim", package, *path.relative_to(ROOT / package).with_suffix("").parts]
            if "_migrations" in parts or parts[-1] == "__main__":
                continue
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_every_product_exception_derives_from_the_root() -> None:
    found = []
    for name in _product_modules():
        try:
            module = importlib.import_module(name)
        except ImportError:  # an optional extra (Ray) this environment lacks
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name and issubclass(cls, BaseException):
                found.append(cls)
    assert len(found) > 30  # the walk reached the packages' errors
    strays = sorted(f"{cls.__module__}.{cls.__qualname__}" for cls in found
                    if not issubclass(cls, OccusimError))
    assert strays == []


@pytest.mark.parametrize(("error", "code"), [
    (RunError("the folder holds another run"), 2),
    (StoreError("the store was written by a later release"), 2),
    (ScenarioErrors([]), 2),
    (ProviderError("openai/gpt-x", 3, ConnectionError("refused")), 1),
])
def test_the_cli_maps_an_error_by_type_to_its_exit_code(error: OccusimError, code: int, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "raising_cmd.py").write_text(
        "import builtins\n"
        "def add_arguments(parser):\n    pass\n"
        "def run(args):\n    raise builtins.RAISED\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("builtins.RAISED", error, raising=False)
    monkeypatch.setitem(COMMANDS, "raising", ("raising_cmd", "raises the error under test"))
    assert main(["raising"]) == code
    assert capsys.readouterr().err == f"occusim raising: {error.user_message()}\n"
    sys.modules.pop("raising_cmd", None)


def test_an_error_of_another_library_is_not_swallowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "buggy_cmd.py").write_text("def add_arguments(parser):\n    pass\n"
                                           "def run(args):\n    raise KeyError('a bug')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(COMMANDS, "buggy", ("buggy_cmd", "has a bug"))
    with pytest.raises(KeyError):
        main(["buggy"])
