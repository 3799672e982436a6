"""The reference LLM agent and the reference replayer, driving real episodes through the SDK's MCP client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from occusim.clients import LLMAgent, ReplayAgent, connect, system_prompt
from occusim.environments import FaultSettings, load_catalog
from occusim.llm import ScriptedReply, scripted_model
from occusim.server import EpisodeService, Store, build_mcp_server
from tests.helpers import TASK_A, TASK_B, ReplayWorld, ScriptedAgent

CATALOG = load_catalog([])


@pytest.fixture
async def service(tmp_path: Path):
    async with Store(tmp_path / "episodes.db") as store:
        yield EpisodeService(CATALOG, store, world_model=ReplayWorld(CATALOG).model)


async def play(service: EpisodeService, agent, task_id: str = TASK_B, faults: FaultSettings | None = None,
               **options):
    episode = await service.create(task_id, faults=faults)
    async with connect(build_mcp_server(episode)) as client:
        run = await agent.run(client, occupation=episode.scenario.occupation, **options)
    return episode, run


async def test_llm_agent_works_the_task_over_mcp_and_submits(service: EpisodeService):
    scripted = ScriptedAgent(lambda task, seed: "replay", CATALOG)
    task = CATALOG.task(TASK_B)

    episode, run = await play(service, LLMAgent(scripted.model), seed=7)

    assert run.ended == "submitted" and run.final_answer == task.final_answer
    assert episode.status == "submitted" and episode.record.final_answer == task.final_answer
    assert [step.tool for step in episode.record.steps] == [step.tool for step in task.reference_solution]
    assert run.tool_calls == len(task.reference_solution)
    # One model call per turn: every reference call, then the submission; all under the agent role.
    assert run.usage.calls == len(task.reference_solution) + 1
    assert all(request["seed"] == 7 and request["role"] == "agent" for request in scripted.requests)
    offered = {tool["function"]["name"] for tool in scripted.requests[0]["tools"]}
    assert offered == {tool.name for tool in episode.scenario.tools} | {"submit_result"}
    assert run.submit_result["status"] == "submitted"


async def test_the_transcript_is_what_the_agent_saw(service: EpisodeService):
    scripted = ScriptedAgent(lambda task, seed: "replay", CATALOG)

    episode, run = await play(service, LLMAgent(scripted.model), task_id=TASK_A, faults=FaultSettings(mode="E1"))

    system, user = run.messages[0], run.messages[1]
    assert system == {"role": "system", "content": system_prompt(episode.scenario.occupation)}
    assert "Emergency" in system["content"]
    # Neutral in every mode: nothing tells the agent that tools fail or how to cope with it.
    for hint in ("reliab", "fail", "error", "stale", "retry", "cross-check", "fault", "timeout"):
        assert hint not in system["content"].lower()
    assert CATALOG.task(TASK_A).instruction.strip() in user["content"]
    tool_messages = [m for m in run.messages if m["role"] == "tool"]
    # Each tool message is the observation exactly as recorded for the step, injected faults included.
    shown = [json.loads(m["content"]) for m in tool_messages[:-1]]
    assert shown == [step.observation for step in episode.record.steps]
    faulted = [step for step in episode.record.steps if step.fault is not None]
    assert faulted and all(step.observation["error"]["type"] in ("http_error", "timeout", "connection_error")
                           for step in faulted)
    calls = [m for m in run.messages if m["role"] == "assistant"]
    assert all(m["tool_calls"][0]["id"] == t["tool_call_id"] for m, t in zip(calls, tool_messages, strict=True))


async def test_the_runner_submits_when_the_turns_run_out(service: EpisodeService):
    def stubborn(messages: list[dict], request: dict) -> ScriptedReply:
        return ScriptedReply(text="Still checking.", tool_calls=[
            {"name": "get_dispute", "arguments": {"dispute_id": "DSP-240410-0044"}}])

    episode, run = await play(service, LLMAgent(scripted_model(stubborn)), max_turns=3)

    assert run.ended == "max_steps" and run.tool_calls == 3
    assert run.final_answer.startswith("[submitted by the agent runner: step limit reached")
    assert run.final_answer.endswith("Still checking.")
    assert episode.status == "submitted" and episode.record.final_answer == run.final_answer


async def test_an_agent_that_stops_calling_tools_is_nudged_once_then_submitted(service: EpisodeService):
    def talker(messages: list[dict], request: dict) -> str:
        return "I believe the dispute should be accepted."

    episode, run = await play(service, LLMAgent(scripted_model(talker)))

    assert run.ended == "no_tool_call" and run.tool_calls == 0
    nudges = [m for m in run.messages if m["role"] == "user"][1:]
    assert len(nudges) == 1 and "submit_result" in nudges[0]["content"]
    assert run.final_answer.endswith("I believe the dispute should be accepted.")
    assert episode.status == "submitted"


async def test_errors_go_back_to_the_model_and_the_loop_goes_on(service: EpisodeService):
    replies = iter([
        ScriptedReply(tool_calls=[{"name": "shred_records", "arguments": {}}]),
        ScriptedReply(tool_calls=[{"name": "get_dispute", "arguments": {"dispute_id": 12}}]),
        ScriptedReply(tool_calls=[{"name": "submit_result", "arguments": {"answer": "gave up"}}]),
    ])
    seen: list[int] = []

    def clumsy(messages: list[dict], request: dict) -> ScriptedReply:
        seen.append(len(messages))
        return next(replies)

    episode, run = await play(service, LLMAgent(scripted_model(clumsy)))

    unknown, invalid = [json.loads(m["content"]) for m in run.messages if m["role"] == "tool"][:2]
    assert unknown["error"]["type"] == "unknown_tool" and "get_dispute" in unknown["error"]["message"]
    assert invalid["error"]["type"] == "invalid_arguments"
    assert run.ended == "submitted" and run.final_answer == "gave up"
    assert seen == [2, 4, 6]  # the model saw each call and its error before its next turn
    assert [step.tool for step in episode.record.steps] == ["get_dispute"]  # unknown tools are not steps


async def test_provider_failures_of_the_agent_propagate(service: EpisodeService, monkeypatch: pytest.MonkeyPatch):
    import litellm

    from occusim.llm import ProviderError

    monkeypatch.setenv("OCCUSIM_LLM_RETRIES", "1")

    def down(messages: list[dict], request: dict) -> str:
        raise litellm.RateLimitError("slow down", llm_provider="openai", model="a")

    with pytest.raises(ProviderError):
        await play(service, LLMAgent(scripted_model(down)))


async def test_replay_agent_replays_the_reference_and_retries_explicit_faults(service: EpisodeService):
    task = CATALOG.task(TASK_A)
    events = []

    episode, run = await play(service, ReplayAgent(task), task_id=TASK_A, faults=FaultSettings(mode="E1"),
                              on_tool_result=events.append)

    assert run.agent_model == "reference-replay" and run.ended == "submitted"
    assert run.final_answer == task.final_answer and run.usage.calls == 0
    succeeded = [step.tool for step in episode.record.steps if not step.is_error]
    assert succeeded == [step.tool for step in task.reference_solution]
    retried = [step for step in episode.record.steps if step.is_error]
    assert retried and all(step.fault.kind == "explicit" for step in retried)
    assert [event.name for event in events][-1] == "submit_result"
    assert len(events) == len(episode.record.steps) + 1


def test_replay_agent_needs_a_reference_solution():
    task = CATALOG.task(TASK_A).model_copy(update={"reference_solution": []})

    with pytest.raises(ValueError, match="no reference_solution"):
        ReplayAgent(task)


async def test_connect_refuses_a_token_without_an_http_url(service: EpisodeService):
    episode = await service.create(TASK_A)

    with pytest.raises(ValueError, match="HTTP MCP URL"):
        async with connect(build_mcp_server(episode), token="secret"):
            pass
    with pytest.raises(ValueError, match="http:// or https://"):
        async with connect("ftp://example.org/mcp"):
            pass


def test_the_agent_uses_the_tool_and_prompt_names_the_server_publishes():
    import occusim.server
    from occusim.clients import _conversation

    assert (_conversation.SUBMIT_TOOL, _conversation.TASK_PROMPT) == (occusim.server.SUBMIT_TOOL,
                                                                      occusim.server.TASK_PROMPT)


async def test_a_malformed_answer_of_the_agents_provider_is_an_infra_failure(service: EpisodeService,
                                                                             monkeypatch: pytest.MonkeyPatch):
    from occusim.clients._episode_runner import infra_failure
    from occusim.llm import ProviderError
    from tests.helpers import Reply, provider_stub

    monkeypatch.setenv("OCCUSIM_LLM_RETRIES", "2")
    with provider_stub(Reply({"id": "x", "object": "chat.completion", "choices": []})) as stub:
        with pytest.raises(ProviderError) as raised:
            await play(service, LLMAgent(stub.model, cache=False))

    assert len(stub.requests) == 2
    assert infra_failure(raised.value)  # retried by the batch runner, reported as infra_error, never scored
