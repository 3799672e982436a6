"""The test provider's streamed answers, read back by the OpenAI SDK's own stream reader: a policy endpoint for
frameworks whose harness asks `stream: true` (verifiers)."""

from __future__ import annotations

import json

from openai import AsyncOpenAI

from tests.helpers import STUB_KEY, Reply, chat_reply, provider_stub

CALL = {
    "id": "call-1",
    "type": "function",
    "function": {"name": "set_priority", "arguments": json.dumps({"patient_id": "P1"})},
}


async def test_a_streamed_answer_reads_back_as_the_same_message():
    with provider_stub(Reply(chat_reply(None, [CALL], usage=(12, 3))), Reply(chat_reply("done"))) as stub:
        client = AsyncOpenAI(base_url=stub.url, api_key=STUB_KEY)
        async with client.chat.completions.stream(
            model="stub", messages=[{"role": "user", "content": "go"}], stream_options={"include_usage": True}
        ) as stream:
            first = await stream.get_final_completion()
        plain = await client.chat.completions.create(
            model="stub", messages=[{"role": "user", "content": "go"}]
        )

    [choice] = first.choices
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    [call] = choice.message.tool_calls
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "call-1",
        "set_priority",
        {"patient_id": "P1"},
    )
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (12, 3)
    # Without `stream`, the same stub answers with a plain JSON body.
    assert plain.choices[0].message.content == "done"
    assert [request.get("stream") for request in stub.requests] == [True, None]
