"""Processes sharing a store sign episode tokens with one key: a process started with another key than the
first one's, or with none (a key file of its own), refuses to start, naming the setting to fix; one started
with the same key serves the others' episodes."""

from __future__ import annotations

import uuid

import httpx
import pytest
import yaml

from occusim.server import Store
from occusim.service import ConfigError, check_shared_key
from tests.helpers import (
    API_KEYS,
    CHEST_PAIN,
    POSTGRES_URL,
    drop_schema,
    free_port,
    start_service,
    wait_healthy,
    write_triage_source,
)

FIRST, OTHER = "first-token-secret-0123456789", "other-token-secret-0123456789"
ALICE = {"Authorization": f"Bearer {API_KEYS['alice']}"}


async def test_a_second_process_with_another_secret_refuses_to_start(tmp_path):
    source = write_triage_source(tmp_path)
    config = tmp_path / "service.yaml"
    config.write_text(
        yaml.safe_dump(
            {"db": str(tmp_path / "shared.db"), "api_keys": API_KEYS, "world_model": "scripted/triage"}
        )
    )
    ports = [free_port() for _ in range(4)]
    logs = [tmp_path / f"service-{port}.log" for port in ports]
    first = start_service(tmp_path, config, source, ports[0], logs[0], OCCUSIM_TOKEN_SECRET=FIRST)
    processes = [first]
    try:
        await wait_healthy([f"http://127.0.0.1:{ports[0]}"], [first], within=300)
        other = start_service(tmp_path, config, source, ports[1], logs[1], OCCUSIM_TOKEN_SECRET=OTHER)
        processes.append(other)
        assert other.wait(timeout=300) == 2
        # Without a secret it would sign with a key file of its own.
        keyless = start_service(tmp_path, config, source, ports[3], logs[3])
        processes.append(keyless)
        assert keyless.wait(timeout=300) == 2
        same = start_service(tmp_path, config, source, ports[2], logs[2], OCCUSIM_TOKEN_SECRET=FIRST)
        processes.append(same)
        bases = [f"http://127.0.0.1:{ports[0]}", f"http://127.0.0.1:{ports[2]}"]
        await wait_healthy(bases, [first, same], within=300)
        async with httpx.AsyncClient(timeout=30) as http:
            created = await http.post(f"{bases[0]}/v1/episodes", json={"task_id": CHEST_PAIN}, headers=ALICE)
            episode = created.json()
            # The token the first process signed opens the episode's MCP endpoint on the second.
            opened = await http.post(
                f"{bases[1]}/v1/episodes/{episode['episode_id']}/mcp",
                headers={
                    "Authorization": f"Bearer {episode['token']}",
                    "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": "2025-11-25",
                },
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "test", "version": "1"},
                    },
                },
            )
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=60)
    refusal = logs[1].read_text()
    assert "sign episode tokens with another key" in refusal and "OCCUSIM_TOKEN_SECRET" in refusal, refusal
    assert "sign episode tokens with another key" in logs[3].read_text()
    assert FIRST not in refusal and OTHER not in refusal, "the message shows no secret"
    assert "Traceback" not in refusal
    assert created.status_code == 201 and opened.status_code == 200, opened.text


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
async def test_the_first_key_is_kept_and_another_is_refused(tmp_path, kind):
    url = str(tmp_path / "keys.db") if kind == "sqlite" else POSTGRES_URL
    schema = None if kind == "sqlite" else f"hosted_keys_{uuid.uuid4().hex[:12]}"
    try:
        async with Store(url, schema=schema) as store:
            await check_shared_key(store, FIRST.encode())
            await check_shared_key(store, FIRST.encode())  # the same key again, as a restart
            with pytest.raises(ConfigError, match="another key than this one"):
                await check_shared_key(store, OTHER.encode())
    finally:
        if schema is not None:
            await drop_schema(schema)
