"""schemathesis against both services' generated OpenAPI documents: every response matches the document,
no server error, no schema-valid request refused, `Allow` headers that match the document."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn
from fastapi import FastAPI

from occusim.judge import judge_app
from occusim.llm import scripted_model
from occusim.service import create_app, load_settings
from tests.helpers import free_port

API_KEY = "conformance-key-0123456789"
CONFIG = Path(__file__).with_name("schemathesis.toml")
# Bounded so both runs stay short; the seed keeps a failure reproducible.
SCHEMATHESIS = ["--checks", "all", "--max-examples", "5", "--phases", "coverage,fuzzing", "--seed", "20260101", "--workers", "1",
                "--no-color", "--request-timeout", "30"]


def _approve(messages: list[dict], request: dict) -> dict:
    """A judge model that passes every check it is shown, so judging never needs a real model."""
    checks = request["response_schema"]["properties"]["verdicts"]["required"]
    return {"verdicts": {check: {"reason": "seen", "evidence_steps": [], "passed": True} for check in checks}}


JUDGE_MODEL = scripted_model(_approve, name="conformance-judge")


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """The app on a real uvicorn on a free loopback port, in a background thread."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the service did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def schemathesis(url: str, report: Path, *headers: str) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).with_name("schemathesis")), "--config-file", str(CONFIG), "run",
               f"{url}/openapi.json", *SCHEMATHESIS,
               "--report", "junit", "--report-dir", str(report)]
    for header in headers:
        command += ["--header", header]
    # Its example database would carry cases from one run into the next; keep it in the test's folder.
    env = {**os.environ, "HOME": str(report)}
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, cwd=report)


def _assert_clean(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "No issues found" in done.stdout or " passed" in done.stdout, done.stdout[-3000:]


@pytest.mark.skipif(not Path(sys.executable).with_name("schemathesis").exists(), reason="schemathesis is not installed")
def test_the_hosted_service_conforms_to_its_document(tmp_path):
    settings = load_settings(overrides={
        "db": str(tmp_path / "hosted.db"), "api_keys": {"alice": API_KEY}, "world_model": "scripted/unused",
        "judge_model": JUDGE_MODEL, "token_secret": "conformance-token-secret-0123456789",
        "expire_every_seconds": 3600,
    }, environ={})
    with serving(create_app(settings)) as url:
        done = schemathesis(url, tmp_path, f"Authorization: Bearer {API_KEY}")
    _assert_clean(done)


@pytest.mark.skipif(not Path(sys.executable).with_name("schemathesis").exists(), reason="schemathesis is not installed")
def test_the_judge_service_conforms_to_its_document(tmp_path):
    with serving(judge_app(JUDGE_MODEL, votes=1)) as url:
        done = schemathesis(url, tmp_path)
    _assert_clean(done)
