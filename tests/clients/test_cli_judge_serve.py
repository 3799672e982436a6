"""`occusim judge-serve`: a real uvicorn on 127.0.0.1 answering POST /v1/judge; remote binds refused."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from occusim.clients.cli import main
from tests.helpers import free_port

TRAJECTORY = {
    "id": "ep-1",
    "task_id": "example-refill-desk/one-refill",
    "scenario_id": "example-refill-desk",
    "state": {"prescriptions": {"101": {"refills_left": 1}}},
}


@pytest.fixture
def task(scenario_data) -> dict:
    data = scenario_data()["tasks"][0]
    data["rubric"]["items"].append(
        {"id": "answer", "kind": "llm", "description": "", "checks": ["It is right"]}
    )
    return data


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("judge-serve") / "stderr.log"


@pytest.fixture(scope="module")
def service(log: Path) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    command = [sys.executable, "-m", "occusim", "judge-serve", "--port", str(port), "--max-body-mb", "0.01"]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"judge-serve exited early: {log.read_text()}")
            try:
                httpx.get(base + "/v1/judge", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_deterministic_verdict_over_http(service: str, task: dict) -> None:
    body = {"task": task, "trajectory": TRAJECTORY, "llm_items": "skip"}
    response = httpx.post(service + "/v1/judge", json=body, timeout=30)
    assert response.status_code == 200, response.text
    verdict = response.json()
    assert [item["passed"] for item in verdict["items"]] == [True, False, None]  # no call recorded
    assert verdict["partial"] is True and verdict["score"] == 0.5 and verdict["passed"] is False


def test_malformed_bodies_get_clear_4xx(service: str, task: dict) -> None:
    not_json = httpx.post(service + "/v1/judge", content=b"task=1", timeout=30)
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["error"]
    invalid = httpx.post(service + "/v1/judge", json={"task": task, "trajectory": {"id": 3}}, timeout=30)
    assert invalid.status_code == 422
    assert {"trajectory.task_id", "trajectory.scenario_id"} <= {e["field"] for e in invalid.json()["errors"]}
    huge = httpx.post(
        service + "/v1/judge", json={"task": task, "trajectory": TRAJECTORY, "pad": "x" * 20000}
    )
    assert huge.status_code == 413 and "larger than the limit of 10485 bytes" in huge.json()["error"]
    assert [r.json()["type"] for r in (not_json, invalid, huge)] == ["invalid_json", "invalid_body", "body_too_large"]


def test_serves_its_openapi_document(service: str) -> None:
    document = httpx.get(service + "/openapi.json", timeout=30).json()
    assert list(document["paths"]) == ["/v1/judge"]
    assert {"JudgeRequest", "Verdict", "ErrorBody"} <= document["components"]["schemas"].keys()


def test_refuses_a_remote_bind_without_auth(capsys) -> None:
    assert main(["judge-serve", "--host", "0.0.0.0"]) == 2
    assert "refusing to serve '0.0.0.0' without authentication" in capsys.readouterr().err


def test_answers_421_to_a_host_it_does_not_serve(service: str) -> None:
    # DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1.
    rebound = httpx.get(service + "/openapi.json", headers={"Host": "evil.example:8100"}, timeout=30)
    assert rebound.status_code == 421 and rebound.json()["type"] == "untrusted_host"
    assert httpx.get(service + "/openapi.json", headers={"Host": "localhost"}, timeout=30).status_code == 200


def test_keeps_query_values_out_of_its_access_log(service: str, log: Path) -> None:
    secret = "s3cr3t-link-value"
    httpx.get(f"{service}/openapi.json?access={secret}&episode=ep-1", timeout=30)
    deadline = time.monotonic() + 10
    while "/openapi.json?access=" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    written = log.read_text()
    assert "/openapi.json?access=***&episode=***" in written, written[-2000:]
    assert secret not in written
