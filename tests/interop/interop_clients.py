"""One episode with each third-party MCP client, in its own virtualenv, over stdio and over HTTP.

`make interop` installs the clients (pinned in requirements/) and runs this file; `make test` does not
collect it (its name is not test_*.py). Each client script plays the same episode on the triage task
(list the tools, a call, a call the server refuses as `is_error`, `submit_result`) with the client's own
API and reports what it saw; the test checks the report and what the server recorded.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from episode_wire import ANSWER, CALL, INVALID_CALL, SUBMIT, EpisodeReport, HttpTarget, StdioTarget, Target

from occusim.environments import EpisodeRecord
from occusim.server import Store
from tests.helpers import (
    CHEST_PAIN,
    PYTHON,
    TRIAGE,
    LiveServer,
    hosted_settings,
    serve_args,
    server_env,
    write_triage_source,
)

HERE = Path(__file__).parent
CLIENTS = sorted(path.stem for path in (HERE / "requirements").glob("*.txt"))
TOOLS = [*(tool["name"] for tool in TRIAGE["tools"]), SUBMIT]
# What the server passes on to a stdio server process: MCP clients start it with a minimal environment.
SERVER_ENV = ("OCCUSIM_SCRIPTED_MODELS", "PYTHONPATH", "LITELLM_LOCAL_MODEL_COST_MAP", "XDG_DATA_HOME")


def play(python: Path, script_name: str, target: Target, tmp_path: Path) -> EpisodeReport:
    """Run tests/interop/client_<script_name>.py on the target in the client's virtualenv; its report."""
    script = HERE / f"client_{script_name.replace('-', '_')}.py"
    started = time.monotonic()
    # The client's virtualenv alone: nothing of occusim's environment leaks into it.
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    done = subprocess.run([str(python), str(script), target.model_dump_json()], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, f"{script.name} failed:\n{done.stdout}\n{done.stderr}"
    report = EpisodeReport.model_validate_json(done.stdout.strip().splitlines()[-1])
    print(f"{report.client}: {time.monotonic() - started:.1f} s")
    return report


def check_report(report: EpisodeReport) -> None:
    assert report.tools == TOOLS
    called, refused, submitted = report.results
    assert (called.tool, called.is_error) == (CALL[0], False)
    assert called.content == {"ok": True, "patient_id": "P1", "priority": 1}
    assert (refused.tool, refused.is_error) == (INVALID_CALL[0], True)
    assert refused.content["error"]["type"] == "invalid_arguments"
    assert "9 is greater than the maximum of 5" in refused.content["error"]["message"]
    assert (submitted.tool, submitted.is_error) == (SUBMIT, False)
    assert submitted.content["status"] == "submitted"


def check_steps(steps: list[tuple[str, bool]]) -> None:
    assert steps == [(CALL[0], False), (INVALID_CALL[0], True)], "one episode, holding both calls"


def stdio_target(tmp_path: Path) -> Target:
    env = server_env(tmp_path)
    args = serve_args(CHEST_PAIN, write_triage_source(tmp_path), tmp_path / "episodes.db")
    return Target(stdio=StdioTarget(command=PYTHON, args=args, env={name: env[name] for name in SERVER_ENV}))


async def stored_episodes(tmp_path: Path) -> list[EpisodeRecord]:
    store = Store(tmp_path / "episodes.db")
    await store.init()
    try:
        return [await store.load_episode(summary.id) for summary in await store.list_episodes()]
    finally:
        await store.close()


@pytest.mark.parametrize("client", CLIENTS)
async def test_an_episode_over_stdio(client, tmp_path, interop_python):
    python = interop_python(client)

    check_report(play(python, client, stdio_target(tmp_path), tmp_path))

    [record] = await stored_episodes(tmp_path)
    check_steps([(step.tool, step.is_error) for step in record.steps])
    assert record.status == "submitted" and record.final_answer == ANSWER


async def test_a_connection_per_call_starts_an_episode_per_call_over_stdio(tmp_path, interop_python):
    # The hazard docs/mcp-clients.md warns about, with langchain's default get_tools(): every call works,
    # but each lands in an episode of its own, and the submitted one holds no step.
    python = interop_python("langchain")

    check_report(play(python, "langchain_per_call", stdio_target(tmp_path), tmp_path))

    records = await stored_episodes(tmp_path)
    assert len(records) >= 3 and all(len(record.steps) <= 1 for record in records)
    [submitted] = [record for record in records if record.status == "submitted"]
    assert submitted.steps == [] and submitted.final_answer == ANSWER


@pytest.mark.parametrize("client", CLIENTS)
def test_an_episode_over_http_with_the_bearer_header(client, tmp_path, interop_python):
    python = interop_python(client)
    with LiveServer(hosted_settings(tmp_path)) as server:
        episode = httpx.post(f"{server.url}/v1/episodes", json={"task_id": CHEST_PAIN},
                             headers=server.headers()).json()
        http = HttpTarget(url=episode["mcp_url"], token=episode["token"])

        check_report(play(python, client, Target(http=http), tmp_path))

        status = httpx.get(f"{server.url}/v1/episodes/{episode['episode_id']}", headers=server.headers()).json()
    check_steps([(step["tool"], step["is_error"]) for step in status["steps"]])
    assert status["status"] == "submitted" and status["final_answer"] == ANSWER
