"""The reference LLM agent: offers an MCP server's tools to a model through occusim.llm until it submits."""

from __future__ import annotations

from typing import Protocol

from mcp import Client

from occusim.llm import LLMOutputError, ModelConfig, ResponseCache, UsageLedger, complete

from ._conversation import SUBMIT_TOOL, AgentRun, McpConversation, OnToolResult

NUDGE = (f"You replied without calling a tool. Continue with the tools, or call `{SUBMIT_TOOL}` with your final "
         "answer if you are done.")
MAX_STEPS_LABEL = "[submitted by the agent runner: step limit reached without submit_result]"
NO_TOOL_LABEL = "[submitted by the agent runner: the model stopped calling tools]"


class Agent(Protocol):
    """Anything that can work through one episode over an MCP client."""

    @property
    def name(self) -> str: ...

    async def run(self, client: Client, *, occupation: str | None = None, seed: int | None = None,
                  max_turns: int | None = None, on_tool_result: OnToolResult | None = None) -> AgentRun: ...


class LLMAgent:
    """A model acting through native tool calls (OpenAI tool format, so any litellm provider works).

    One turn is one model call. The loop ends when the model calls `submit_result`; after `max_turns`
    turns, or when the model twice in a row answers without a tool call, the runner submits the model's
    last text on its behalf, labelled. Provider failures (ProviderError) propagate: they are not the
    agent's doing. Usage is recorded under the role "agent".
    """

    def __init__(self, model: ModelConfig | str, *, max_turns: int = 30, temperature: float = 0.0,
                 max_tokens: int | None = None, timeout: float = 120.0,
                 cache: ResponseCache | bool | None = None) -> None:
        self.model = model if isinstance(model, ModelConfig) else ModelConfig.for_role("agent", model=model)
        self.max_turns = max_turns
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.cache = cache

    @property
    def name(self) -> str:
        return self.model.model

    async def run(self, client: Client, *, occupation: str | None = None, seed: int | None = None,
                  max_turns: int | None = None, on_tool_result: OnToolResult | None = None) -> AgentRun:
        conversation = McpConversation(client, on_tool_result=on_tool_result)
        await conversation.open(occupation)
        ledger = UsageLedger()
        last_text = ""
        silent_turns = 0
        for _ in range(max_turns or self.max_turns):
            try:
                completion = await complete(
                    self.model, conversation.messages, tools=conversation.tools, temperature=self.temperature,
                    seed=seed, timeout=self.timeout, max_tokens=self.max_tokens, role="agent", cache=self.cache,
                )
            except LLMOutputError as error:
                # Unusable tool-call arguments: tell the model, as a person reviewing its output would.
                conversation.say("user", f"Your last reply could not be used ({error}). Call the tools with "
                                         "arguments that are one JSON object.")
                continue
            ledger.add("agent", completion)
            last_text = completion.text or last_text
            if completion.tool_calls:
                silent_turns = 0
                calls = [(c.id, c.name, c.arguments, c.raw_arguments) for c in completion.tool_calls]
                await conversation.act(completion.text, calls)
                if conversation.submitted:
                    return conversation.run(self.name, "submitted", ledger.by_role.get("agent"))
                continue
            conversation.say("assistant", completion.text)
            silent_turns += 1
            if silent_turns >= 2:
                await conversation.submit(_labelled(NO_TOOL_LABEL, last_text))
                return conversation.run(self.name, "no_tool_call", ledger.by_role.get("agent"))
            conversation.say("user", NUDGE)
        await conversation.submit(_labelled(MAX_STEPS_LABEL, last_text))
        return conversation.run(self.name, "max_steps", ledger.by_role.get("agent"))


def _labelled(label: str, text: str) -> str:
    return f"{label} {text}".strip()
