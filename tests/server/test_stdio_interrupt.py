"""`occusim serve TASK_ID` on stdio in a real subprocess: it says on stderr that it waits for an MCP client, and
Ctrl+C (SIGINT) stops it at once, with the client still connected, keeping the episode's steps in the store."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from occusim.server import Store
from tests.helpers import CHEST_PAIN, PYTHON, serve_args, server_env, write_triage_source

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "interrupt-test", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "set_priority", "arguments": {"patient_id": "P1", "priority": 1}}}


def lines_of(stream: IO[str]) -> queue.Queue[str]:
    """The stream's lines as they come, read by a thread of their own (so waits can time out)."""
    found: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:
            found.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return found


@pytest.fixture
def served(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    source = write_triage_source(tmp_path)
    process = subprocess.Popen([PYTHON, *serve_args(CHEST_PAIN, source, tmp_path / "episodes.db")],
                               env=server_env(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


def send(process: subprocess.Popen[str], message: dict) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message) + "\n")
    process.stdin.flush()


async def test_ctrl_c_stops_a_waiting_stdio_server_at_once_and_keeps_the_episode(
        served: subprocess.Popen[str], tmp_path: Path):
    assert served.stdout is not None and served.stderr is not None
    out, err = lines_of(served.stdout), lines_of(served.stderr)

    notice = err.get(timeout=60)
    assert "waiting for an MCP client" in notice and CHEST_PAIN in notice and "Ctrl+C" in notice

    send(served, INITIALIZE)
    assert json.loads(out.get(timeout=60))["id"] == 1
    send(served, INITIALIZED)
    send(served, CALL)
    answer = json.loads(out.get(timeout=60))
    assert answer["id"] == 2 and not answer["result"].get("isError")

    # The client stays connected (stdin open): the server is blocked reading it when the signal comes.
    served.send_signal(signal.SIGINT)
    status = served.wait(timeout=15)

    assert status == 130
    rest = "".join(err.get(timeout=5) for _ in range(err.qsize()))
    assert "stopped" in rest and "interrupted" in rest
    store = Store(tmp_path / "episodes.db")
    await store.init()
    try:
        [summary] = await store.list_episodes()
        record = await store.load_episode(summary.id)
    finally:
        await store.close()
    assert record.task_id == CHEST_PAIN and [step.tool for step in record.steps] == ["set_priority"]
