"""The triage scenario served for real: `occusim serve` arguments for a process, a uvicorn thread, MCP clients."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import uvicorn
import yaml
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from occusim.environments import Catalog
from occusim.rest import read_deadline_protocol
from occusim.server import Store
from occusim.service import ServiceSettings, create_app, load_settings

from . import triage_worlds
from ._postgres import POSTGRES_URL
from ._triage import CHEST_PAIN, TRIAGE, triage_catalog

PYTHON = sys.executable
CHECKOUT = str(Path(__file__).resolve().parents[2])
API_KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789"}
TOKEN_SECRET = "test-token-secret-0123456789abcdef"
# Client modes: "auto" negotiates the 2026-07-28 protocol (no session id); "legacy" does the handshake.
MODERN, LEGACY = "auto", "legacy"
MODERN_VERSION = "2026-07-28"


def write_triage_source(folder: Path) -> Path:
    path = folder / "triage-desk.yaml"
    path.write_text(yaml.safe_dump(TRIAGE, sort_keys=False))
    return path


def server_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a server process: the triage world models registered, data files under tmp_path."""
    env = dict(os.environ)
    inherited = [part for part in env.get("PYTHONPATH", "").split(os.pathsep) if part and part != CHECKOUT]
    env.update(
        # The scripted models live in the checkout's tests.helpers, which the installed package does not ship.
        PYTHONPATH=os.pathsep.join([CHECKOUT, *inherited]),
        OCCUSIM_SCRIPTED_MODELS=triage_worlds.__name__,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    env.update(extra)
    return env


def serve_args(task_id: str, source: Path, db: Path, *extra: str) -> list[str]:
    """`occusim serve` arguments for a stdio episode of the triage source, simulated by scripted/triage."""
    return ["-m", "occusim", "serve", task_id, "--source", str(source), "--no-bundled", "--db", str(db),
            "--world-model", triage_worlds.TRIAGE_WORLD, "--log-level", "warning", *extra]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def hosted_settings(tmp_path: Path, **overrides: Any) -> ServiceSettings:
    values: dict[str, Any] = {
        "db": str(tmp_path / "hosted.db"), "api_keys": API_KEYS, "world_model": triage_worlds.TRIAGE_WORLD,
        "token_secret": TOKEN_SECRET, "expire_every_seconds": 3600,
    }
    values.update(overrides)
    return load_settings(overrides=values, environ={})


class LiveServer:
    """A real uvicorn serving the app on 127.0.0.1 in a background thread (its own event loop)."""

    def __init__(self, settings: ServiceSettings, catalog: Catalog | None = None, *, port: int | None = None) -> None:
        self.settings = settings
        self.app = create_app(settings, catalog=catalog if catalog is not None else triage_catalog())
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on",
                                timeout_keep_alive=math.ceil(settings.keep_alive_seconds),
                                http=read_deadline_protocol(header_seconds=settings.header_timeout_seconds,
                                                            body_seconds=settings.body_timeout_seconds))
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name=f"uvicorn-{self.port}", daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)

    def headers(self, tenant: str = "alice") -> dict[str, str]:
        return {"Authorization": f"Bearer {API_KEYS[tenant]}"}


@contextlib.asynccontextmanager
async def mcp_session(url: str, token: str | None, mode: str = MODERN,
                      read_timeout: float = 60.0) -> AsyncIterator[Client]:
    """An SDK client on an episode's MCP URL: mode MODERN (no session id) or LEGACY (initialize handshake)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(read_timeout)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


# Tool calls on the chest-pain episode, taken in turn: a read, a read by id, a write.
TRIAGE_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_patients", {}), ("get_patient", {"patient_id": "P2"}), ("set_priority", {"patient_id": "P1", "priority": 1}),
]


async def open_episode(http: httpx.AsyncClient, base: str) -> dict[str, Any]:
    """Creates a chest-pain episode as alice on the service at `base`: the created episode's body."""
    created = await http.post(f"{base}/v1/episodes", json={"task_id": CHEST_PAIN},
                              headers={"Authorization": f"Bearer {API_KEYS['alice']}"})
    assert created.status_code == 201, created.text
    return dict(created.json())


async def play_triage_episode(http: httpx.AsyncClient, base: str, calls: int, mode: str = MODERN,
                              read_timeout: float = 60.0) -> dict[str, Any]:
    """A chest-pain episode through `base`: `calls` calls of TRIAGE_CALLS over MCP, then the answer, each
    one without error. The created episode's body."""
    body = await open_episode(http, base)
    async with mcp_session(body["mcp_url"], body["token"], mode, read_timeout=read_timeout) as client:
        for number in range(calls):
            tool, arguments = TRIAGE_CALLS[number % len(TRIAGE_CALLS)]
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result
        submitted = await client.call_tool("submit_result", {"answer": "P1 is priority 1"})
        assert not submitted.is_error, submitted
    return body


def start_service(tmp_path: Path, config: Path, source: Path, port: int, log: Path,
                  **env: str) -> subprocess.Popen[bytes]:
    """`occusim serve --http` as a process of its own: the triage source only, settings from `config`."""
    return subprocess.Popen(
        [PYTHON, "-m", "occusim", "serve", "--http", "--config", str(config), "--source", str(source),
         "--no-bundled", "--port", str(port), "--log-level", "warning"],
        env=server_env(tmp_path, **env), stderr=log.open("w"),
    )


async def wait_healthy(bases: list[str], processes: list[subprocess.Popen[bytes]], within: float = 60,
                       health: str = "/healthz") -> None:
    """Until every service answers `health`; fails if one exits or the time runs out."""
    deadline = time.monotonic() + within
    async with httpx.AsyncClient() as http:
        for base, process in zip(bases, processes, strict=True):
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"the service on {base} exited with {process.returncode}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the service on {base} did not start within {within:.0f} s")
                try:
                    if (await http.get(f"{base}{health}")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def service_processes(folder: Path, schema: str, count: int = 2, env: dict[str, str] | None = None,
                            **settings: Any) -> AsyncIterator[list[str]]:
    """`count` `occusim serve --http` processes of the triage source sharing one PostgreSQL schema, with the
    slow scripted world model and `settings` on top; the store is migrated once before they start, as a
    deployment's release step would. Yields their base URLs; stops them on leaving, then (when the body
    succeeded) asserts that no log holds a traceback or an error."""
    source = write_triage_source(folder)
    config = folder / "service.yaml"
    config.write_text(yaml.safe_dump({
        "db": POSTGRES_URL, "db_schema": schema, "api_keys": API_KEYS, "token_secret": TOKEN_SECRET,
        "world_model": "scripted/triage-slow", "expire_every_seconds": 3600, **settings,
    }))
    async with Store(POSTGRES_URL, schema=schema):
        pass
    ports = [free_port() for _ in range(count)]
    logs = [folder / f"service-{port}.log" for port in ports]
    processes = [start_service(folder, config, source, port, log, **(env or {}))
                 for port, log in zip(ports, logs, strict=True)]
    try:
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        await wait_healthy(bases, processes)
        yield bases
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=60)
    for log in logs:
        text = log.read_text()
        assert "Traceback" not in text and " ERROR " not in text, text[-2000:]
