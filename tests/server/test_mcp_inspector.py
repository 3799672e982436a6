"""The MCP Inspector CLI (installed by `make inspector`) lists the tools and calls one, over stdio and HTTP."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx

from occusim.testing import (
    CHEST_PAIN,
    PYTHON,
    LiveServer,
    hosted_settings,
    serve_args,
    server_env,
    write_triage_source,
)

TOOLS = ["list_patients", "get_patient", "set_priority", "submit_result"]
CALL = ["--method", "tools/call", "--tool-name", "set_priority", "--tool-arg", "patient_id=P1", "--tool-arg",
        "priority=1"]


def inspect(inspector: Path, tmp_path: Path, *arguments: str) -> dict:
    env = dict(os.environ, MCP_CATALOG_PATH=str(tmp_path / "inspector-catalog.json"))
    done = subprocess.run([str(inspector), "--cli", *arguments], capture_output=True, text=True, env=env,
                          timeout=180, cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout[done.stdout.index("{"):])


def test_inspector_over_stdio(tmp_path, mcp_inspector):
    source = write_triage_source(tmp_path)
    # MCP clients start servers with a minimal environment, so it is passed with -e.
    env = server_env(tmp_path)
    passed = [f"-e{name}={env[name]}" for name in
              ("OCCUSIM_SCRIPTED_MODELS", "LITELLM_LOCAL_MODEL_COST_MAP", "XDG_DATA_HOME")]
    server = ["--", PYTHON, *serve_args(CHEST_PAIN, source, tmp_path / "episodes.db")]

    listed = inspect(mcp_inspector, tmp_path, *passed, "--method", "tools/list", *server)
    called = inspect(mcp_inspector, tmp_path, *passed, *CALL, *server)

    assert [tool["name"] for tool in listed["tools"]] == TOOLS
    assert called["isError"] is False
    assert called["structuredContent"] == {"ok": True, "patient_id": "P1", "priority": 1}


def test_inspector_over_http(tmp_path, mcp_inspector):
    with LiveServer(hosted_settings(tmp_path)) as server:
        created = httpx.post(f"{server.url}/v1/episodes", json={"task_id": CHEST_PAIN}, headers=server.headers())
        episode = created.json()
        target = [episode["mcp_url"], "--transport", "http", "--header", f"Authorization: Bearer {episode['token']}"]

        listed = inspect(mcp_inspector, tmp_path, *target, "--method", "tools/list")
        called = inspect(mcp_inspector, tmp_path, *target, *CALL)
        status = httpx.get(f"{server.url}/v1/episodes/{episode['episode_id']}", headers=server.headers()).json()

    assert [tool["name"] for tool in listed["tools"]] == TOOLS
    assert called["structuredContent"] == {"ok": True, "patient_id": "P1", "priority": 1}
    assert [step["tool"] for step in status["steps"]] == ["set_priority"]
