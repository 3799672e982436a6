"""Write scenarios as readable YAML: block scalars for long text, fields in model order, no anchors."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from yaml.emitter import ScalarAnalysis

from ._scenario import Scenario

# Strings longer than this (or with a line break) are written as `|` block scalars.
BLOCK_THRESHOLD = 80


# Characters a literal block can hold exactly; anything else (control characters, \r, the BOM, the
# Unicode line separators) needs a double-quoted string.
_NOT_LITERAL = re.compile(
    "[^\n\t\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010fffe]"
)


class _ScenarioDumper(yaml.SafeDumper):
    """A dumper that never emits `&id001` anchors: repeated values are written out in full."""

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def analyze_scalar(self, scalar: str) -> Any:
        # For text we write as a literal block, only "can a block hold it exactly?" matters. PyYAML's
        # own scan is slow on long prompts and refuses lines with trailing blanks or tabs, although a
        # literal block keeps both exactly.
        if getattr(self.event, "style", None) != "|":
            return super().analyze_scalar(scalar)
        literal = not _NOT_LITERAL.search(scalar) and not scalar.endswith((" ", "\t"))
        return ScalarAnalysis(
            scalar=scalar,
            empty=False,
            multiline="\n" in scalar,
            allow_flow_plain=False,
            allow_block_plain=False,
            allow_single_quoted=False,
            allow_double_quoted=True,
            allow_block=literal,
        )


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # Text a literal block cannot hold exactly falls back to a double-quoted string (see analyze_scalar),
    # so the file always loads back to the same string.
    style = "|" if "\n" in value or len(value) > BLOCK_THRESHOLD else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ScenarioDumper.add_representer(str, _represent_str)


def scenario_document(scenario: Scenario) -> dict[str, Any]:
    """The scenario as plain data, as a file would hold it: only set fields, no implied task.scenario."""
    return scenario.model_dump(mode="json", exclude_unset=True, exclude={"tasks": {"__all__": {"scenario"}}})


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_ScenarioDumper, sort_keys=False, allow_unicode=True, width=100)


def dump_scenario(scenario: Scenario, *, header: str | None = None) -> str:
    """YAML text that `load_scenario_file` reads back to an equal scenario; `header` becomes # comments."""
    comment = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines()) if header else ""
    return comment + dump_yaml(scenario_document(scenario))


def write_scenario(scenario: Scenario, path: Path | str, *, header: str | None = None) -> Path:
    """Write one scenario file, creating its folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_scenario(scenario, header=header), encoding="utf-8")
    return path
