"""`/healthz` answers 503 when the store or Redis cannot be reached, naming neither's address, and tenants'
limit errors keep the Redis address to the operator's log."""

from __future__ import annotations

import contextlib
import socket
import threading
import uuid

import httpx
import pytest
from sqlalchemy import make_url

from occusim.service import Health
from tests.helpers import API_KEYS, POSTGRES_URL, LiveServer, drop_schema, hosted_settings


class _Relay:
    """A TCP relay on loopback to host:port, in threads of its own (the server under test blocks the test's
    loop while it starts); `cut()` closes every connection and the listener, as an outage would."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = [self.listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self.listener.accept()
                upstream = socket.create_connection(self.target)
                self.sockets += [client, upstream]
                for source, sink in ((client, upstream), (upstream, client)):
                    threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def cut(self) -> None:
        for each in self.sockets:
            with contextlib.suppress(OSError):
                each.shutdown(socket.SHUT_RDWR)
            each.close()


async def test_a_redis_that_cannot_be_reached_makes_health_503_without_its_address(tmp_path):
    settings = hosted_settings(tmp_path, redis="redis://:hunter2@127.0.0.1:1/0", limits={"tool_calls_per_minute": 5})
    with LiveServer(settings) as server:
        async with httpx.AsyncClient(timeout=60) as http:
            health = await http.get(f"{server.url}/healthz")
            usage = await http.get(f"{server.url}/v1/usage", headers={"Authorization": f"Bearer {API_KEYS['alice']}"})
    assert health.status_code == 503 and health.headers["retry-after"] == "5"
    answer = Health.model_validate(health.json())
    assert answer.status == "unavailable" and answer.dependencies == {"store": "ok", "redis": "unavailable"}
    assert usage.status_code == 503 and usage.json()["type"] == "limits_unavailable"
    for body in (health.text, usage.text):
        assert "127.0.0.1" not in body and ":1/" not in body and "hunter2" not in body and "redis://" not in body


async def test_health_is_ok_with_what_it_checked(tmp_path):
    with LiveServer(hosted_settings(tmp_path)) as server:
        async with httpx.AsyncClient(timeout=60) as http:
            health = await http.get(f"{server.url}/healthz")
    assert health.status_code == 200
    assert Health.model_validate(health.json()).dependencies == {"store": "ok"}


@pytest.mark.postgres
async def test_a_store_that_goes_away_makes_health_503(tmp_path):
    schema = f"health_{uuid.uuid4().hex[:10]}"
    real = make_url(POSTGRES_URL)
    try:
        relay = _Relay(real.host or "127.0.0.1", real.port or 5432)
        relayed = real.set(host="127.0.0.1", port=relay.port).render_as_string(hide_password=False)
        settings = hosted_settings(tmp_path, db=relayed, db_schema=schema)
        with LiveServer(settings) as server:
            async with httpx.AsyncClient(timeout=60) as http:
                before = await http.get(f"{server.url}/healthz")
                relay.cut()
                after = await http.get(f"{server.url}/healthz")
    finally:
        await drop_schema(schema)
    assert before.status_code == 200, before.text
    assert after.status_code == 503, after.text
    assert Health.model_validate(after.json()).dependencies == {"store": "unavailable"}
    assert str(relay.port) not in after.text and "postgres" not in after.text
