"""One rule for what a tool result's error is, from the world model's answer to the MCP client's result."""

from __future__ import annotations

from occusim.clients import connect
from occusim.environments import SUBMIT_TOOL, ToolErrorType, read_tool_error, reports_error
from occusim.server import build_mcp_server
from tests.helpers import TRIAGE, TriageModel, start_episode

PATIENTS = TRIAGE["initial_state"]["patients"]
P1 = PATIENTS[0]


async def test_an_empty_error_member_is_a_success_for_the_episode_and_the_client(sqlite_store):
    observation = {"error": [], "patients": PATIENTS, "count": 3}
    model = TriageModel(replies=[{"observation": observation, "state_patch": []}])
    episode = await start_episode(sqlite_store, model)

    async with connect(build_mcp_server(episode)) as client:
        result = await client.call_tool("list_patients", {})

    assert model.calls == 1
    assert result.is_error is False and result.structured_content == observation
    assert episode.record.steps[0].is_error is False and not reports_error(observation)


async def test_an_empty_error_member_does_not_excuse_an_answer_from_its_output_schema(sqlite_store):
    model = TriageModel(replies=[{"observation": {"error": []}, "state_patch": []}])
    episode = await start_episode(sqlite_store, model)

    outcome = await episode.step("get_patient", {"patient_id": "P1"})

    assert model.calls == 2
    assert "'id' is a required property" in model.requests[1][0][-1]["content"]
    assert outcome.observation == P1 and not outcome.is_error


async def test_a_simulated_error_object_of_its_own_type_is_an_error_result(sqlite_store):
    observation = {"error": {"type": "not_found", "message": "no patient P9", "searched": 3}}
    model = TriageModel(replies=[{"observation": observation, "state_patch": []}])
    episode = await start_episode(sqlite_store, model)

    async with connect(build_mcp_server(episode)) as client:
        result = await client.call_tool("get_patient", {"patient_id": "P9"})

    assert model.calls == 1
    assert result.is_error is True and result.structured_content == observation
    error = read_tool_error(result.structured_content)
    assert error is not None and (error.type, error.message) == ("not_found", "no patient P9")
    assert episode.record.steps[0].is_error is True


async def test_the_server_refusals_and_recorded_errors_read_back_with_their_types(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model, task_id="triage-desk/short")

    async with connect(build_mcp_server(episode)) as client:
        results = [
            await client.call_tool("set_priority", {"patient_id": "P1", "priority": 9}),
            await client.call_tool("discharge", {}),
            await client.call_tool(SUBMIT_TOOL, {"answer": 3}),
            await client.call_tool("list_patients", {}),
            await client.call_tool("list_patients", {}),
        ]

    types = [read_tool_error(result.structured_content) for result in results]
    assert [error.type if error else None for error in types] == [
        ToolErrorType.INVALID_ARGUMENTS, ToolErrorType.UNKNOWN_TOOL, ToolErrorType.INVALID_ARGUMENTS, None,
        ToolErrorType.STEP_LIMIT,
    ]
    assert [result.is_error for result in results] == [True, True, True, False, True]
    assert types[0].violations and types[0].violations[0].path == "priority"
