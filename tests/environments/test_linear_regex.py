"""Scenario `pattern`s run on RE2 in linear time; loading refuses patterns RE2 cannot run and the usual shapes
that make backtracking engines (agents' clients) take exponential time."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from occusim.environments import local_validator, validate_sources
from occusim.environments._linear_regex import pattern_problem, search

HOSTILE = r"^(P|P?)+[0-9]+$"
# Patterns loading accepts, each with one way to match, as the bundled catalog writes them.
SAFE = [r"^WR-[0-9]{4}$", r"^[A-Z]{2}-[0-9]{6}[A-Z]?$", r"^([a-z]+\.)*[a-z]+$", r"^(ab|cd)*$", r"^\d{3}-\d{4}$",
        r"^(?:P\d+|Q\d+)$", r"[0-9]", r"^$"]


def test_validate_refuses_a_catastrophic_pattern_by_path(scenario_data, write_scenario_yaml):
    data = scenario_data()
    data["tools"][0]["input_schema"]["properties"]["code"] = {"type": "string", "pattern": HOSTILE}
    data["tools"][0]["input_schema"]["properties"]["twin"] = {"type": "string", "pattern": r"(\w)\1"}
    report = validate_sources([write_scenario_yaml(data)])
    found = {error.location: error.message for error in report.errors}
    assert "repeats alternatives that can match the same text" in found["tools[0].input_schema.properties.code.pattern"]
    assert "linear-time engine lacks" in found["tools[0].input_schema.properties.twin.pattern"]


@pytest.mark.parametrize(("pattern", "why"), [
    (HOSTILE, "alternatives"), (r"(a+)+b", "itself repeats"), (r"(\w+\s?)*$", "itself repeats"),
    (r"(a|ab)*c", "alternatives"), (r"(?=a)b", "lacks"), (r"a{1001}", "lacks"), ("([A-Z", "invalid"),
])
def test_refused_patterns_say_why(pattern, why):
    assert why in (pattern_problem(pattern) or "")


@pytest.mark.parametrize("pattern", SAFE)
def test_one_way_patterns_are_accepted(pattern):
    assert pattern_problem(pattern) is None


def test_a_pattern_that_held_the_loop_for_seconds_is_answered_at_once():
    # 26 "P"s took the backtracking engine 18 s, x4 per 2 more; here 5,000 are read once.
    validator = local_validator({"type": "object", "properties": {"code": {"type": "string", "pattern": HOSTILE}},
                                 "patternProperties": {HOSTILE: {"type": "integer"}}, "additionalProperties": False})
    errors = list(validator.iter_errors({"code": "P" * 5000 + "x", "P" * 5000 + "x": 1}))
    assert {error.message.split(" ")[-1] for error in errors} == {repr(HOSTILE), f"'{HOSTILE}'"}
    assert not list(validator.iter_errors({"code": "PP12", "PP3": 4}))


@given(pattern=st.sampled_from(SAFE), text=st.text(alphabet="abcdPQWR-.0123456789", max_size=12))
def test_the_linear_engine_agrees_with_the_standard_validator(pattern, text):
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}},
              "patternProperties": {pattern: {"type": "integer"}}, "additionalProperties": {"type": "boolean"}}
    instance = {"v": text, text: 1 if re.search(pattern, text) else True}
    assert search(pattern, text) == (re.search(pattern, text) is not None)
    ours = sorted(e.message for e in local_validator(schema).iter_errors(instance))
    theirs = sorted(e.message for e in Draft202012Validator(schema).iter_errors(instance))
    assert ours == theirs


def test_unevaluated_properties_beside_pattern_properties_is_refused(scenario_data, write_scenario_yaml):
    data = scenario_data()
    data["state_schema"] = {"type": "object", "patternProperties": {"^x": {}}, "unevaluatedProperties": False}
    report = validate_sources([write_scenario_yaml(data)])
    assert any(e.location == "state_schema.unevaluatedProperties" for e in report.errors), report.errors
