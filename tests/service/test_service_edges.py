"""The hosted service's edges: malformed Host headers, RFC 6750 challenges, CORS preflights, the MCP path with
a trailing slash, unsupported protocol versions, schema names, an unreachable store, the start banner."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from occusim.clients.cli import main
from occusim.clients.cli.serve import start_importing_litellm
from occusim.server import Store
from occusim.service import ConfigError, load_settings
from tests.helpers import (
    CHEST_PAIN,
    PYTHON,
    LiveServer,
    free_port,
    hosted_settings,
    server_env,
    write_triage_source,
)

REPO = Path(__file__).resolve().parents[2]
UNREACHABLE = "postgresql://postgres@127.0.0.1:1/test"


def test_host_header_tricks_and_credentials(tmp_path):
    with LiveServer(hosted_settings(tmp_path)) as server, httpx.Client(timeout=60) as http:
        tasks = f"{server.url}/v1/tasks"
        for host in ("127.0.0.1:80@evil.com", "127.0.0.1:evil.com", "localhost:80/x"):
            refused = http.get(tasks, headers={**server.headers(), "Host": host})
            assert refused.status_code == 421 and refused.json()["type"] == "untrusted_host", host
        assert http.get(tasks, headers={**server.headers(), "Host": f"127.0.0.1:{server.port}"}).status_code == 200

        wrong = http.get(tasks, headers={"Authorization": "Bearer not-a-key"})
        missing = http.get(tasks)
        assert wrong.status_code == missing.status_code == 401
        assert wrong.headers["WWW-Authenticate"] == 'Bearer realm="occusim", error="invalid_token"'
        assert missing.headers["WWW-Authenticate"] == 'Bearer realm="occusim"'
        created = http.post(f"{server.url}/v1/episodes", json={"task_id": CHEST_PAIN}, headers=server.headers()).json()
        bad_token = http.post(created["mcp_url"], json={}, headers={"Authorization": "Bearer ept_wrong"})
        assert bad_token.headers["WWW-Authenticate"].endswith('error="invalid_token"')


def test_cors_preflights_from_trusted_origins_only(tmp_path):
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"}
    with LiveServer(hosted_settings(tmp_path)) as server, httpx.Client(timeout=60) as http:
        allowed = http.options(f"{server.url}/v1/episodes", headers={**preflight, "Origin": "http://localhost:6274"})
        foreign = http.options(f"{server.url}/v1/episodes", headers={**preflight, "Origin": "https://evil.example"})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "http://localhost:6274"
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    assert foreign.status_code == 403 and foreign.json()["type"] == "untrusted_origin"


def test_mcp_path_with_a_trailing_slash_and_unsupported_versions(tmp_path):
    with LiveServer(hosted_settings(tmp_path)) as server, httpx.Client(timeout=60) as http:
        created = http.post(f"{server.url}/v1/episodes", json={"task_id": CHEST_PAIN}, headers=server.headers()).json()
        headers = {"Authorization": f"Bearer {created['token']}", "Accept": "application/json, text/event-stream"}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "edge", "version": "1"}}}
        slashed = http.post(created["mcp_url"] + "/", json=init, headers=headers)
        assert slashed.status_code == 200 and slashed.json()["result"]["protocolVersion"] == "2025-11-25"

        old = http.post(created["mcp_url"], json=init, headers={**headers, "MCP-Protocol-Version": "1999-01-01"})
    assert old.status_code == 400
    error = old.json()["error"]
    assert error["message"].startswith("unsupported MCP-Protocol-Version '1999-01-01'; this server speaks ")
    assert "2025-11-25" in error["data"]["supported"] and "2026-07-28" in error["data"]["supported"]


def test_schema_names_and_short_token_secrets_are_refused_with_the_reason():
    with pytest.raises(ConfigError, match="db_schema"):
        load_settings(overrides={"db_schema": 'x"; DROP SCHEMA public CASCADE; --'}, environ={})
    with pytest.raises(ValueError, match="schema name .* is not valid"):
        Store("postgresql://postgres@127.0.0.1/test", schema='a"b')
    with pytest.raises(ConfigError, match="token_secret: String should have at least 16 characters"):
        load_settings(overrides={"token_secret": "short"}, environ={})


def test_an_unreachable_store_stops_serve_with_a_message(tmp_path, capsys, monkeypatch):
    source = write_triage_source(tmp_path)
    # A PostgreSQL store is shared by replicas, which must sign tokens with one secret: given here, so that
    # the store is what stops it.
    monkeypatch.setenv("OCCUSIM_TOKEN_SECRET", "a-secret-the-replicas-share-0123456789")
    assert main(["serve", "--http", "--no-auth", "--no-bundled", "--source", str(source), "--db", UNREACHABLE]) == 2
    assert main(["serve", CHEST_PAIN, "--no-bundled", "--source", str(source), "--db", UNREACHABLE]) == 2
    errors = capsys.readouterr().err
    assert errors.count("occusim serve: cannot open the store postgresql+asyncpg://postgres@127.0.0.1:1/test") == 2
    assert "Traceback" not in errors


def test_the_banner_reads_plainly_and_litellm_starts_importing(tmp_path):
    port = free_port()
    process = subprocess.Popen(
        [PYTHON, "-m", "occusim", "serve", "--http", "--no-auth", "--port", str(port), "--no-bundled", "--source",
         str(write_triage_source(tmp_path)), "--db", str(tmp_path / "served.db"), "--log-level", "warning"],
        env=server_env(tmp_path), cwd=str(REPO), stderr=subprocess.PIPE, text=True,
    )
    try:
        assert process.stderr is not None
        banner = process.stderr.readline()
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert banner.startswith(f"occusim serve: http://127.0.0.1:{port} without auth (loopback only), store ")
    start_importing_litellm().join()
    assert "litellm" in sys.modules
