"""A fake OpenAI-compatible endpoint for the side-by-side bench, run in its own process so that its CPU is
not charged to either harness: every answer waits a fixed latency, then plays its role by the model name.

Each answer is written `--latency` seconds after its request arrived, whatever the endpoint's own work took.
`fake-agent` calls one tool per turn (arguments built from the tool's schema) for `--tool-calls` turns, then
answers; `fake-world` answers a JSON observation inside the harness's tags, or the text of `--world-answer`
when given; `fake-verifier` passes the task.
Usage: python bench/_fake_openai.py --latency 0.5 --tool-calls 16 --tags '<o>' '</o>'  (prints its base URL)
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
from typing import Any

import _checkout  # noqa: F401

from tests.helpers import chat_reply, schema_arguments

AGENT, WORLD, VERIFIER = "fake-agent", "fake-world", "fake-verifier"


class Roles:
    def __init__(self, tool_calls: int, tags: tuple[str, str], world_answer: str | None = None) -> None:
        self.tool_calls = tool_calls
        self.tags = tags
        self.world_answer = world_answer

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        model = body.get("model")
        messages = body.get("messages") or []
        if model == AGENT:
            return self._agent(messages, body.get("tools") or [])
        if model == WORLD and self.world_answer is not None:
            return _message(self.world_answer)
        if model == WORLD:
            turn = sum(1 for m in messages if m.get("role") == "assistant")
            data = {"status": "ok", "turn": turn, "items": [{"id": 1, "state": "open"}, {"id": 2, "state": "done"}]}
            return _message(f"{self.tags[0]}\n{json.dumps(data)}\n{self.tags[1]}")
        return _message('```json\n{"is_correct": true, "feedback": "every step checks out"}\n```')

    def _agent(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        if turn >= self.tool_calls or not tools:
            return _message(f"Done after {turn} tool calls.")
        function = tools[turn % len(tools)]["function"]
        call = {
            "id": f"call_{turn}", "type": "function",
            "function": {"name": function["name"],
                         "arguments": json.dumps(schema_arguments(function.get("parameters") or {}, "R-7"))},
        }
        return _message(None, [call])


def _message(content: str | None, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return chat_reply(content, tool_calls, usage=(100, 20))


async def _serve(roles: Roles, latency: float) -> None:
    loop = asyncio.get_running_loop()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                # The latency runs from the request's arrival: reading and answering it takes none of its own.
                due = loop.time() + latency
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = json.loads(await reader.readexactly(length)) if length else {}
                data = json.dumps(roles.reply(body)).encode()
                await asyncio.sleep(due - loop.time())
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                             % (len(data), data))
                await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
    port = server.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    async with server:
        await server.serve_forever()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--tool-calls", type=int, default=16)
    parser.add_argument("--tags", nargs=2, default=("<predicted_observation>", "</predicted_observation>"))
    parser.add_argument("--world-answer", help="the text every fake-world answer carries (default: tagged JSON)")
    args = parser.parse_args()
    # What start-up built stays out of the collector's sight: a full collection over it paused every answer
    # for about 90 ms, a latency of the endpoint's own.
    gc.freeze()
    try:
        asyncio.run(_serve(Roles(args.tool_calls, (args.tags[0], args.tags[1]), args.world_answer), args.latency))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
