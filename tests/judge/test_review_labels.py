"""A reviewer's labels file: the one format read back line by line, the last label winning, clear errors, and
the committed JSON Schema generated from the model."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from occusim.judge import (
    REVIEW_LABEL_SCHEMA_PATH,
    LabelFileError,
    ReviewLabel,
    label_line,
    latest_labels,
    read_review_labels,
    review_label_json_schema,
    reviewer_problem,
)

WHEN = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)


def label(item: str = "answer", passed: bool = True, *, episode: str = "ep-1", reviewer: str = "alice",
          note: str = "") -> ReviewLabel:
    return ReviewLabel(episode_id=episode, task_id="chargeback/dispute", scenario_id="chargeback", item=item,
                       passed=passed, note=note, reviewer=reviewer, labelled_at=WHEN)


def test_lines_are_read_in_order_and_the_last_label_per_item_wins(tmp_path: Path):
    path = tmp_path / "alice.jsonl"
    path.write_text(label_line(label(passed=True)) + "\n" + label_line(label("state-closed"))
                    + label_line(label(passed=False, note="no amount")), encoding="utf-8")

    placed = read_review_labels(path)
    assert [p.line for p in placed] == [1, 3, 4]  # the blank line is skipped, numbers stay the file's
    latest = latest_labels(placed)
    assert sorted(latest) == [("alice", "ep-1", "answer"), ("alice", "ep-1", "state-closed")]
    winner = latest[("alice", "ep-1", "answer")]
    assert (winner.line, winner.label.passed, winner.label.note) == (4, False, "no amount")
    assert winner.where == f"{path}:4"


def test_malformed_lines_are_named_by_file_line_and_field(tmp_path: Path):
    path = tmp_path / "bob.jsonl"
    good = json.loads(label_line(label()))
    path.write_text("\n".join([
        json.dumps(good),
        "{not json",
        json.dumps({**good, "passed": "maybe"}),
        json.dumps({**good, "reviewer": "../etc"}),
        json.dumps({key: value for key, value in good.items() if key != "item"}),
        json.dumps({**good, "extra": 1}),
    ]) + "\n", encoding="utf-8")

    with pytest.raises(LabelFileError) as raised:
        read_review_labels(path)
    lines = str(raised.value).splitlines()
    assert lines[0].startswith(f"{path}:2: not JSON:")
    assert lines[1].startswith(f"{path}:3: passed: ")
    assert lines[2].startswith(f"{path}:4: reviewer: String should match pattern")
    assert lines[3] == f"{path}:5: item: Field required"
    assert lines[4] == f"{path}:6: extra: Extra inputs are not permitted"


def test_a_missing_or_undecodable_file_is_a_clear_error(tmp_path: Path):
    with pytest.raises(LabelFileError, match="no such labels file"):
        read_review_labels(tmp_path / "none.jsonl")
    (tmp_path / "binary.jsonl").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(LabelFileError, match="cannot read the labels file"):
        read_review_labels(tmp_path / "binary.jsonl")
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    assert read_review_labels(tmp_path / "empty.jsonl") == []


@pytest.mark.parametrize(("name", "usable"), [
    ("alice", True), ("a.b_c-1", True), ("A" * 64, True), ("", False), ("-x", False), ("../x", False),
    ("a b", False), ("A" * 65, False), ("é", False),
])
def test_reviewer_names_are_safe_file_names(name: str, usable: bool):
    assert (reviewer_problem(name) is None) is usable


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=80), max_size=5))
def test_any_text_is_read_or_refused_with_a_labels_file_error(tmp_path: Path, lines: list[str]):
    path = tmp_path / "fuzz.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    try:
        read_review_labels(path)
    except LabelFileError as error:
        assert str(error).startswith(str(path))


@settings(max_examples=100, deadline=None)
@given(item=st.text(min_size=1, max_size=30), note=st.text(max_size=200), passed=st.booleans())
def test_every_label_survives_its_line(item: str, note: str, passed: bool):
    written = label(item, passed, note=note)
    line = label_line(written)
    assert line.endswith("\n") and line.count("\n") == 1  # one label, one line, whatever the note holds
    assert ReviewLabel.model_validate_json(line) == written
    assert list(Draft202012Validator(review_label_json_schema()).iter_errors(json.loads(line))) == []


def test_committed_schema_equals_the_generated_one_and_refuses_typos():
    committed = json.loads(REVIEW_LABEL_SCHEMA_PATH.read_text(encoding="utf-8"))
    assert committed == review_label_json_schema()
    Draft202012Validator.check_schema(committed)
    bad = {**json.loads(label_line(label())), "pased": True}
    assert [e.validator for e in Draft202012Validator(committed).iter_errors(bad)] == ["additionalProperties"]


def test_the_module_regenerates_and_checks_the_schema(tmp_path: Path):
    out = tmp_path / "review-label.schema.json"
    command = [sys.executable, "-m", "occusim.judge._review_label_schema", "--out", str(out)]
    assert subprocess.run([*command, "--check"], capture_output=True).returncode == 1
    assert subprocess.run(command, capture_output=True).returncode == 0
    assert json.loads(out.read_text(encoding="utf-8")) == review_label_json_schema()
    assert subprocess.run([*command, "--check"], capture_output=True).returncode == 0


def test_the_schema_ships_in_the_wheel():
    config = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert REVIEW_LABEL_SCHEMA_PATH.name in config["tool"]["setuptools"]["package-data"]["occusim.judge"]
