"""OccuBench's agent over MCP: its prompts, its tools without submit_result, done at its first plain reply."""

from __future__ import annotations

import inspect
from typing import Any, cast

import mcp_types as types
from mcp import Client

from occusim.clients import AgentRun, OnToolResult, ToolEvent, openai_tool, result_text
from occusim.environments import RAW_ARGUMENTS_META, SUBMIT_TOOL, Usage
from occusim.llm import LLMError, ModelConfig, RetryPolicy, UsageLedger, complete, derived_seed

from ._harness import HarnessPrompts
from ._verifier import HARNESS_ATTEMPTS


class OccubenchAgent:
    """The agent of OccuBench's harness, with occusim's MCP episode in place of its environment object.

    It sends OccuBench's system prompt (scenario name and today's date) and task message, offers the
    server's tools except `submit_result`, and passes every call's arguments on as the model's own
    string (in the request's `_meta`), even when that string is not JSON or not an object: the harness
    hands such text to its world model as it came, and the episode goes on. The episode ends on the first reply without tool calls, on a reply
    that finishes with `stop`, or after the harness's turn limit; the last reply's text is then submitted
    as the answer, unlabelled. Sampling is OccuBench's: its max_tokens, no temperature, no seed.
    With `stop_on_outage`, each request is tried as often as OccuBench's client tries it, and a provider
    that still fails ends the run there, as the harness's agent does (`outage` says why); otherwise the
    failure is raised.
    """

    def __init__(self, model: ModelConfig, prompts: HarnessPrompts, *, scenario_name: str, instruction: str,
                 timeout: float = 120.0, stop_on_outage: bool = False) -> None:
        self.stop_on_outage = stop_on_outage
        self.model = model
        self.name = model.model
        self.prompts = prompts
        self.scenario_name = scenario_name
        self.instruction = instruction
        self.timeout = timeout

    async def run(self, client: Client, *, occupation: str | None = None, seed: int | None = None,
                  max_turns: int | None = None, on_tool_result: OnToolResult | None = None) -> AgentRun:
        listed = await client.list_tools()
        tools = [openai_tool(tool) for tool in listed.tools if tool.name != SUBMIT_TOOL]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.prompts.agent_system_prompt(self.scenario_name)},
            {"role": "user", "content": self.prompts.agent_user_prompt(self.instruction)},
        ]
        ledger = UsageLedger()
        answer = ""
        calls = 0
        turns = max_turns or self.prompts.agent_max_turns
        finished = False
        # OccuBench sends no seed: the trial's only keys the cache.
        cache_seed = None if seed is None else derived_seed(seed, "occubench-agent", 0)
        outage = None
        retry = RetryPolicy(attempts=HARNESS_ATTEMPTS) if self.stop_on_outage else None
        for _turn in range(turns):
            try:
                completion = await complete(self.model, messages, tools=tools or None, temperature=None,
                                            max_tokens=self.prompts.agent_max_tokens, timeout=self.timeout,
                                            role="agent", cache_seed=cache_seed, keep_unreadable_arguments=True,
                                            retry=retry)
            except LLMError as error:
                if not self.stop_on_outage:
                    raise
                outage = f"agent outage: {error}"
                break
            ledger.add("agent", completion)
            answer = completion.text
            message: dict[str, Any] = {"role": "assistant", "content": completion.text or ""}
            if completion.tool_calls:
                message["tool_calls"] = [
                    {"id": call.id, "type": "function",
                     "function": {"name": call.name, "arguments": call.raw_arguments}}
                    for call in completion.tool_calls
                ]
            messages.append(message)
            if not completion.tool_calls:
                finished = True
                break
            for call in completion.tool_calls:
                calls += 1
                result = await client.call_tool(call.name, call.arguments,
                                                meta=cast(types.RequestParamsMeta,
                                                          {RAW_ARGUMENTS_META: call.raw_arguments}))
                text = result_text(result)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
                if on_tool_result is not None:
                    event = ToolEvent(call.id, call.name, call.arguments, text, result.is_error,
                                      result.structured_content)
                    outcome = on_tool_result(event)
                    if inspect.isawaitable(outcome):
                        await outcome
            if completion.finish_reason == "stop":
                finished = True
                break
        submitted = await client.call_tool(SUBMIT_TOOL, {"answer": answer})
        return AgentRun(
            agent_model=self.name, messages=messages, tools=tools, final_answer=answer,
            ended="submitted" if finished else "max_steps", tool_calls=calls,
            usage=ledger.by_role.get("agent") or Usage(),
            submit_result=submitted.structured_content if isinstance(submitted.structured_content, dict) else None,
            outage=outage,
        )

