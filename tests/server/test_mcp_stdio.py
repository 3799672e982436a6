"""`occusim serve TASK_ID` over stdio, driven by the official MCP SDK client in a real subprocess."""

from __future__ import annotations

import asyncio
import json

import pytest
from jsonschema import Draft202012Validator
from mcp import Client, StdioServerParameters

from occusim.clients.cli import main
from occusim.environments import FaultSettings
from occusim.server import EpisodeService, Store, build_mcp_server
from occusim.server._mcp_server import advertised_output_schema
from tests.helpers import (
    CHEST_PAIN,
    LEGACY,
    MODERN,
    MODERN_VERSION,
    PYTHON,
    TRIAGE,
    serve_args,
    server_env,
    triage_catalog,
    write_triage_source,
)

SCENARIO_TOOLS = [tool["name"] for tool in TRIAGE["tools"]]


def stdio_server(tmp_path, *extra: str) -> StdioServerParameters:
    source = write_triage_source(tmp_path)
    return StdioServerParameters(
        command=PYTHON, args=serve_args(CHEST_PAIN, source, tmp_path / "episodes.db", *extra),
        env=server_env(tmp_path),
    )


async def stored_episode(tmp_path):
    store = Store(tmp_path / "episodes.db")
    await store.init()
    try:
        [summary] = await store.list_episodes()
        return await store.load_episode(summary.id), await store.load_judgment(summary.id)
    finally:
        await store.close()


# The legacy run also sets a judge model: the submitted episode is then judged (its rubric is deterministic).
@pytest.mark.parametrize(("mode", "judge"), [(MODERN, None), (LEGACY, "scripted/deterministic-only")])
async def test_an_episode_over_stdio(tmp_path, mode, judge):
    extra = ("--judge-model", judge) if judge else ()
    async with Client(stdio_server(tmp_path, *extra), mode=mode) as client:
        assert client.protocol_version == (MODERN_VERSION if mode == MODERN else "2025-11-25")
        instruction = TRIAGE["tasks"][0]["instruction"]
        assert instruction in (client.instructions or "")

        listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == [*SCENARIO_TOOLS, "submit_result"]
        set_priority = next(tool for tool in listed.tools if tool.name == "set_priority")
        assert set_priority.input_schema == TRIAGE["tools"][2]["input_schema"]
        assert set_priority.output_schema is not None and "anyOf" in set_priority.output_schema

        prompt = await client.get_prompt("task")
        assert instruction in prompt.messages[0].content.text
        resource = await client.read_resource("occusim://task")
        assert instruction in resource.contents[0].text

        result = await client.call_tool("set_priority", {"patient_id": "P1", "priority": 1})
        assert not result.is_error
        assert result.structured_content == {"ok": True, "patient_id": "P1", "priority": 1}
        assert json.loads(result.content[0].text) == result.structured_content

        invalid = await client.call_tool("set_priority", {"patient_id": "P1"})
        assert invalid.is_error
        assert "'priority' is a required property" in invalid.structured_content["error"]["message"]

        unknown = await client.call_tool("discharge_patient", {"patient_id": "P1"})
        assert unknown.is_error
        assert unknown.structured_content["error"]["type"] == "unknown_tool"
        assert "set_priority" in unknown.structured_content["error"]["message"]

        submitted = await client.call_tool("submit_result", {"answer": "P1 has priority 1"})
        assert not submitted.is_error and submitted.structured_content["status"] == "submitted"

        after = await client.call_tool("list_patients", {})
        assert after.is_error and after.structured_content["error"]["type"] == "episode_closed"
        again = await client.call_tool("submit_result", {"answer": "twice"})
        assert again.is_error and "is closed" in again.content[0].text

    record, judgment = await stored_episode(tmp_path)
    assert record.final_answer == "P1 has priority 1"
    assert [step.tool for step in record.steps] == ["set_priority", "set_priority"]
    assert [step.is_error for step in record.steps] == [False, True]
    assert record.state["patients"][0]["priority"] == 1
    if judge is None:
        assert record.status == "submitted" and judgment is None
    else:
        assert record.status == "judged"
        assert judgment is not None and judgment.passed is True and judgment.score == 1.0
        assert judgment.verdict["items"][0]["id"] == "p1"


async def test_the_agent_never_reads_the_tasks_title(tmp_path):
    # A title is the author's label and names what the task tests (catalog titles name their traps: "a
    # look-alike serial", "a stale inventory entry"): nothing the server shows an agent may carry it.
    title = TRIAGE["tasks"][0]["title"]
    async with Client(stdio_server(tmp_path)) as client:
        prompts = await client.list_prompts()
        resources = await client.list_resources()
        shown = [
            client.server_info.model_dump_json(), client.instructions or "", prompts.model_dump_json(),
            (await client.get_prompt("task")).model_dump_json(), resources.model_dump_json(),
            (await client.read_resource("occusim://task")).model_dump_json(),
            (await client.list_tools()).model_dump_json(),
        ]
        named = client.server_info.title
    assert [part for part in shown if title in part] == []
    assert named == TRIAGE["name"] and prompts.prompts[0].title == TRIAGE["name"]


async def test_stdout_carries_only_protocol_messages(tmp_path):
    source = write_triage_source(tmp_path)
    process = await asyncio.create_subprocess_exec(
        PYTHON, *serve_args(CHEST_PAIN, source, tmp_path / "episodes.db", "--log-level", "debug"),
        env=server_env(tmp_path),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "get_patient", "arguments": {"patient_id": "P2"}}},
    ]
    stdin = "".join(json.dumps(message) + "\n" for message in messages).encode()
    stdout, stderr = await asyncio.wait_for(_exchange(process, stdin, expect=2), timeout=120)

    lines = stdout.decode().splitlines()
    replies = [json.loads(line) for line in lines]
    assert all(reply["jsonrpc"] == "2.0" for reply in replies)
    assert [reply["id"] for reply in replies] == [1, 2]
    assert replies[1]["result"]["structuredContent"]["name"] == "Ben Okafor"
    assert "is open on stdio" in stderr.decode()  # the logs went to stderr


async def _exchange(process: asyncio.subprocess.Process, stdin: bytes, *, expect: int) -> tuple[bytes, bytes]:
    """Send the messages, wait for `expect` replies, then close stdin so the server exits."""
    assert process.stdin and process.stdout and process.stderr
    process.stdin.write(stdin)
    await process.stdin.drain()
    out = b""
    for _ in range(expect):
        out += await process.stdout.readline()
    process.stdin.close()
    rest, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out + rest, err


async def test_clients_accept_every_degraded_result(tmp_path):
    """E2 nulls fields and truncates lists; the advertised schemas must still admit what the agent is shown."""
    calls = [("list_patients", {}), ("get_patient", {"patient_id": "P1"}), ("get_patient", {"patient_id": "P2"})] * 3
    async with Store(tmp_path / "episodes.db") as store:
        service = EpisodeService(triage_catalog(), store, world_model="scripted/triage")
        episode = await service.create(CHEST_PAIN, faults=FaultSettings(mode="E3", count=4, duration=2, seed=4))
        # The SDK client validates structured content against the output schemas and raises on a mismatch.
        async with Client(build_mcp_server(episode)) as client:
            await client.list_tools()
            results = [await client.call_tool(tool, arguments) for tool, arguments in calls]
    faults = [step.fault for step in episode.record.steps if step.fault is not None]
    assert {fault.kind for fault in faults} == {"explicit", "implicit"}
    assert len(results) == len(calls)


def test_the_advertised_schema_admits_degraded_and_error_results():
    advertised = Draft202012Validator(advertised_output_schema(TRIAGE["tools"][0]["output_schema"]))
    # Degradations null or drop optional fields only: those admit null, required ones keep their type.
    assert advertised.is_valid({"patients": [{"id": "P1", "name": "Ana", "priority": 3, "notes": None}],
                                "count": None})
    assert advertised.is_valid({"patients": []})
    assert not advertised.is_valid({"patients": None})
    assert not advertised.is_valid({"patients": [{"id": "P1", "name": None, "priority": 3}]})
    assert advertised.is_valid({"error": "no patient P9"})
    assert advertised.is_valid({"error": {"type": "timeout", "message": "timed out"}})
    assert not advertised.is_valid({"patients": [{"id": "P1", "name": "Ana", "priority": "high"}]})
    assert not advertised.is_valid({"count": 3})


def test_serve_needs_a_task_or_http(capsys):
    assert main(["serve"]) == 2
    assert "give a TASK_ID" in capsys.readouterr().err


def test_serve_names_an_unknown_task(tmp_path, capsys):
    source = write_triage_source(tmp_path)
    assert main(["serve", "triage-desk/chest-pains", "--source", str(source), "--no-bundled"]) == 2
    assert "Did you mean: triage-desk/chest-pain" in capsys.readouterr().err


def test_http_options_need_http(capsys):
    assert main(["serve", CHEST_PAIN, "--no-auth"]) == 2
    assert "need --http" in capsys.readouterr().err
