"""The tool-result error envelope: how it is written, and how any observation is read as an error or not."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from occusim.environments import SchemaViolation, ToolError, ToolErrorType, read_tool_error, reports_error

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
# Objects that look like envelopes more often than arbitrary JSON would.
ERROR_LIKE = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from([*ToolErrorType, "not_found", ""]) | JSON,
        "message": st.text(max_size=8) | JSON,
        "status": st.integers() | JSON,
        "code": st.integers() | JSON,
        "violations": st.lists(st.fixed_dictionaries({"path": st.text(max_size=4), "message": st.text(max_size=4)}))
        | JSON,
        "details": JSON,
    },
)


def test_the_envelope_keeps_the_field_order_clients_saw_and_leaves_unset_fields_out():
    error = ToolError(type=ToolErrorType.HTTP_ERROR, status=503, message="503 Service Unavailable")

    envelope = error.envelope()

    assert envelope == {"error": {"type": "http_error", "status": 503, "message": "503 Service Unavailable"}}
    assert json.dumps(envelope) == '{"error": {"type": "http_error", "status": 503, "message": "503 Service Unavailable"}}'
    invalid = ToolError(type=ToolErrorType.INVALID_ARGUMENTS, message="bad",
                        violations=[SchemaViolation(path="priority", message="9 is too large")])
    assert invalid.envelope() == {"error": {"type": "invalid_arguments", "message": "bad",
                                            "violations": [{"path": "priority", "message": "9 is too large"}]}}


def test_known_types_become_the_enum_and_others_are_kept_as_written():
    assert read_tool_error({"error": {"type": "timeout", "message": "slow"}}).type is ToolErrorType.TIMEOUT
    own = read_tool_error({"error": {"type": "not_found", "message": "no such unit", "unit": "U7"}})
    assert own.type == "not_found" and own.message == "no such unit"
    # A simulated tool's own fields survive a round trip.
    assert own.envelope() == {"error": {"type": "not_found", "message": "no such unit", "unit": "U7"}}
    with pytest.raises(ValueError, match="must not be empty"):
        ToolError(type="", message="x")


@pytest.mark.parametrize("empty", [None, False, 0, 0.0, "", [], {}])
def test_an_empty_error_member_reports_no_error(empty):
    observation = {"error": empty, "patients": []}
    assert not reports_error(observation)
    assert read_tool_error(observation) is None


@pytest.mark.parametrize(
    ("observation", "kind", "message"),
    [
        ({"error": {"type": "simulator_error", "message": "no answer"}}, ToolErrorType.SIMULATOR_ERROR, "no answer"),
        # The world model's simulated business error is read as the tool's own failure.
        ({"error": "no patient P9"}, ToolErrorType.TOOL_ERROR, "no patient P9"),
        # An object without a type, or with one that is not a string, is the tool's own failure too.
        ({"error": {"code": "E42", "message": "locked"}}, ToolErrorType.TOOL_ERROR, "locked"),
        ({"error": {"type": 7, "message": "odd"}}, ToolErrorType.TOOL_ERROR, "odd"),
        # A wrongly typed field does not hide a known type.
        ({"error": {"type": "http_error", "status": "500"}}, ToolErrorType.HTTP_ERROR,
         '{"status": "500", "type": "http_error"}'),
        ({"error": ["a", "b"]}, ToolErrorType.TOOL_ERROR, '["a", "b"]'),
        ({"error": True}, ToolErrorType.TOOL_ERROR, "true"),
    ],
)
def test_every_reported_error_is_read_with_a_type_and_a_message(observation, kind, message):
    error = read_tool_error(observation)
    assert error is not None and reports_error(observation)
    assert (error.type, error.message) == (kind, message)


@pytest.mark.parametrize("key", ["model_config", "model_fields", "__class__", "__dict__", "copy", "json"])
def test_fields_named_like_python_attributes_are_kept_as_data(key):
    error = read_tool_error({"error": {"type": "not_found", "message": "gone", key: 1}})
    assert error is not None and error.envelope() == {"error": {"type": "not_found", "message": "gone", key: 1}}


@pytest.mark.parametrize("observation", [None, "error", ["error"], 3, {"errors": ["x"]}, {"result": "ok"}])
def test_what_is_not_an_object_with_an_error_member_reports_none(observation):
    assert not reports_error(observation) and read_tool_error(observation) is None


def test_a_world_models_own_null_fields_survive_the_round_trip():
    observation = {"error": {"type": "quota", "message": "over", "code": 0, "retry_after": None}}
    error = read_tool_error(observation)
    assert error is not None and error.envelope() == observation
    assert read_tool_error(error.envelope()) == error


@given(st.one_of(JSON, st.fixed_dictionaries({"error": JSON | ERROR_LIKE}, optional={"data": JSON})))
def test_any_json_is_read_without_raising_and_by_the_one_rule(observation):
    error = read_tool_error(observation)
    assert (error is not None) == reports_error(observation)
    expected = isinstance(observation, dict) and observation.get("error") not in (None, False, 0, "", [], {})
    assert reports_error(observation) == expected
    if error is not None:
        # What was read can be written again, and reads back the same.
        assert read_tool_error(error.envelope()) == error
        json.dumps(error.envelope())


@given(
    st.sampled_from(list(ToolErrorType)), st.text(), st.none() | st.integers(100, 599),
    st.none() | st.integers(-32768, 32767),
)
def test_every_envelope_occusim_writes_reads_back_as_itself(kind, message, status, code):
    error = ToolError(type=kind, message=message, status=status, code=code)
    assert reports_error(error.envelope())
    assert read_tool_error(json.loads(json.dumps(error.envelope()))) == error
