"""The MCP Inspector CLI (installed by `make inspector`) lists the tools and calls one, over stdio and HTTP, and
finds every advertised tool schema portable (its `--strict` check)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx

from occusim.environments import Catalog, Scenario, load_catalog, load_occubench
from tests.helpers import (
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


def run_inspector(inspector: Path, tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MCP_CATALOG_PATH=str(tmp_path / "inspector-catalog.json"))
    return subprocess.run([str(inspector), "--cli", *arguments], capture_output=True, text=True, env=env,
                          timeout=180, cwd=str(tmp_path))


def inspect(inspector: Path, tmp_path: Path, *arguments: str) -> dict:
    done = run_inspector(inspector, tmp_path, *arguments)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout[done.stdout.index("{"):])


def test_inspector_over_stdio(tmp_path, mcp_inspector):
    source = write_triage_source(tmp_path)
    # MCP clients start servers with a minimal environment, so it is passed with -e.
    env = server_env(tmp_path)
    passed = [f"-e{name}={env[name]}" for name in
              ("OCCUSIM_SCRIPTED_MODELS", "PYTHONPATH", "LITELLM_LOCAL_MODEL_COST_MAP", "XDG_DATA_HOME")]
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


def every_tool(scenarios: list[Scenario]) -> tuple[Catalog, str, int]:
    """One scenario holding every tool of `scenarios` (renamed `t<n>_<name>`), so that one listing, one
    Inspector run, walks them all: a tool's advertised schemas depend on the tool alone."""
    tools = [tool.model_copy(update={"name": f"t{n}_{tool.name}"[:64]})
             for n, tool in enumerate(tool for scenario in scenarios for tool in scenario.tools)]
    first = scenarios[0]
    task = first.tasks[0].model_copy(update={"id": "every-tool/listing", "scenario": "every-tool"})
    catalog = Catalog()
    assert not catalog.add(first.model_copy(update={"id": "every-tool", "tools": tools, "tasks": [task]}), "test")
    return catalog, task.id, len(tools)


def strict_listing(inspector: Path, tmp_path: Path, catalog: Catalog, task_id: str):
    """`tools/list --strict` on an episode of `task_id`: the exit status, the tool names and the lint report."""
    with LiveServer(hosted_settings(tmp_path), catalog=catalog) as server:
        episode = httpx.post(f"{server.url}/v1/episodes", json={"task_id": task_id}, headers=server.headers()).json()
        done = run_inspector(inspector, tmp_path, episode["mcp_url"], "--transport", "http", "--header",
                             f"Authorization: Bearer {episode['token']}", "--method", "tools/list", "--strict")
    names = [tool["name"] for tool in json.loads(done.stdout[done.stdout.index("{"):])["tools"]]
    return done.returncode, names, done.stderr


def test_every_bundled_tool_passes_the_inspectors_strict_check(tmp_path, mcp_inspector):
    catalog, task_id, count = every_tool(list(load_catalog().scenarios.values()))

    status, names, report = strict_listing(mcp_inspector, tmp_path, catalog, task_id)

    assert status == 0, report
    assert len(names) == count + 1 and names[-1] == "submit_result"
    assert "Warning" not in report and "Error" not in report, report


def test_the_strict_check_sees_the_type_arrays_the_server_rewrites(tmp_path, mcp_inspector, monkeypatch):
    # The control for the test above: advertised as declared, the catalog's input schemas draw warnings.
    monkeypatch.setattr("occusim.server._mcp_server.portable_schema", lambda schema: schema)
    catalog, task_id, _ = every_tool(list(load_catalog().scenarios.values()))

    status, _, report = strict_listing(mcp_inspector, tmp_path, catalog, task_id)

    assert status == 0, "type arrays are warnings, not errors"
    assert "Warning: tool" in report and "`type` is an array" in report, report


def test_every_occubench_tool_passes_the_inspectors_strict_check(tmp_path, mcp_inspector, occubench_root):
    catalog, task_id, count = every_tool([scenario for scenario, _ in load_occubench(occubench_root)])

    status, names, report = strict_listing(mcp_inspector, tmp_path, catalog, task_id)

    assert status == 0, report
    assert len(names) == count + 1
    assert "Warning" not in report and "Error" not in report, report
