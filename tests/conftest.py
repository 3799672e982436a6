"""Shared fixtures: OccuBench-format releases, a small valid scenario, an isolated response cache, the local
model; and the rule that a test needing a missing service (PostgreSQL, Redis, Chromium, nginx, the MCP
Inspector, the OccuBench sample, Ray) is skipped with the reason, or fails under CI=true, where everything must
run."""

from __future__ import annotations

import asyncio
import copy
import functools
import importlib.util
import os
import shutil
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from occusim.llm import ResponseCache, default_cache, set_default_cache, start_local_model
from tests.helpers import POSTGRES_URL, REDIS_URL, nginx_executable, occubench_sample_path

REPO = Path(__file__).resolve().parents[1]
MINI_OCCUBENCH = REPO / "tests" / "fixtures" / "occubench_mini"
INSPECTOR = Path(os.environ.get("OCCUSIM_INSPECTOR", REPO / ".cache/inspector/node_modules/.bin/mcp-inspector"))
INTEROP_VENVS = REPO / ".cache" / "interop"
RL_INTEROP_VENVS = REPO / ".cache" / "rl-interop"
ON_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
# Processes the tests start (servers, batch workers, Ray workers) import the scripted models from
# `tests.helpers`, which the wheel does not ship: they find it as this process does, through the checkout.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO), *(part for part in os.environ.get("PYTHONPATH", "").split(os.pathsep) if part and part != str(REPO))])


def unavailable(reason: str) -> None:
    """Skip the test for a missing service or file; under CI a missing one is a failure."""
    if ON_CI:
        pytest.fail(f"{reason} (CI=true: everything must be present)", pytrace=False)
    pytest.skip(reason)


def _server_missing(url: str, default_port: int, name: str, variable: str) -> str | None:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or default_port
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError as error:
        return f"no {name} server at {host}:{port} ({error.strerror or error}); set {variable}"
    return None


@functools.cache
def _postgres_missing() -> str | None:
    return _server_missing(POSTGRES_URL, 5432, "PostgreSQL", "OCCUSIM_TEST_POSTGRES_URL")


@functools.cache
def _redis_missing() -> str | None:
    return _server_missing(REDIS_URL, 6379, "Redis", "OCCUSIM_TEST_REDIS_URL")


def _harness_missing() -> str | None:
    sample = occubench_sample_path()
    if (sample / "occubench" / "evaluate.py").is_file() and (sample / "eval_benchmark_solvable.jsonl").is_file():
        return None
    return f"no OccuBench sample with its harness at {sample} (set OCCUSIM_OCCUBENCH_PATH)"


def _ray_missing() -> str | None:
    if importlib.util.find_spec("ray") is None:
        return "Ray is not installed (pip install 'occusim[ray]'; `make setup` installs it)"
    return None


REQUIREMENTS: dict[str, Callable[[], str | None]] = {
    "postgres": _postgres_missing,
    "redis": _redis_missing,
    "occubench_harness": _harness_missing,
    "ray": _ray_missing,
}


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker, missing in REQUIREMENTS.items():
        if item.get_closest_marker(marker) is not None and (reason := missing()) is not None:
            unavailable(reason)


@pytest.fixture
def chromium() -> str:
    """The headless browser's executable."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        unavailable("chromium is not installed (.ci/run installs it with apt-get)")
    assert found is not None
    return found


@pytest.fixture
def nginx() -> str:
    """nginx's executable (Debian's package), for tests that put a reverse proxy in front of replicas."""
    found = nginx_executable()
    if found is None:
        unavailable("nginx is not installed (.ci/run installs it with apt-get)")
    assert found is not None
    return found


@pytest.fixture
def mcp_inspector() -> Path:
    """The MCP Inspector CLI, an independent MCP client, as `make inspector` installs it."""
    if not INSPECTOR.exists():
        unavailable(f"the MCP Inspector CLI is not at {INSPECTOR}: run `make inspector` (needs npm)")
    return INSPECTOR


@pytest.fixture
def interop_python() -> Callable[[str], Path]:
    """The Python of a third-party client's virtualenv, as `make interop` installs it (`.cache/interop/<client>`)."""

    def python(client: str) -> Path:
        found = INTEROP_VENVS / client / "bin" / "python"
        if not (INTEROP_VENVS / client / ".installed-stamp").exists():
            unavailable(f"the {client} client is not installed in {found.parent.parent}: run `make interop`")
        return found

    return python


@pytest.fixture
def rl_interop_venv() -> Callable[[str], Path]:
    """The virtualenv of an RL framework, as `make rl-interop` installs it (`.cache/rl-interop/<framework>`)."""

    def venv(framework: str) -> Path:
        found = RL_INTEROP_VENVS / framework
        if not (found / ".installed-stamp").exists():
            unavailable(f"{framework} is not installed in {found}: run `make rl-interop`")
        return found

    return venv


@dataclass(frozen=True)
class OccuBenchRelease:
    """An OccuBench-format release folder and what importing it gives."""

    root: Path
    tasks: int
    scenarios: int
    categories: frozenset[str]  # folder slugs of the imported files
    healthcare: frozenset[str]  # scenario ids in Healthcare & Life Sciences
    healthcare_tasks: int
    elsewhere: str  # a scenario id in another category


MINI_RELEASE = OccuBenchRelease(
    root=MINI_OCCUBENCH, tasks=5, scenarios=4,
    categories=frozenset({"healthcare-life-sciences", "transportation-logistics", "agriculture-environment",
                          "science-research"}),
    healthcare=frozenset({"occubench-a1c0ffee0001"}), healthcare_tasks=2, elsewhere="occubench-b2d4e6f8a0b2",
)


def _sample_release() -> OccuBenchRelease:
    root = occubench_sample_path()
    if not (root / "eval_benchmark_solvable.jsonl").is_file():
        unavailable(f"no OccuBench sample at {root} (set OCCUSIM_OCCUBENCH_PATH to a copy of the release)")
    return OccuBenchRelease(
        root=root, tasks=64, scenarios=64,
        categories=frozenset({
            "business-enterprise", "technology-it", "industrial-engineering", "transportation-logistics",
            "commerce-consumer", "education-culture", "healthcare-life-sciences", "public-service-governance",
            "agriculture-environment", "science-research",
        }),
        healthcare=frozenset({"occubench-317308673814", "occubench-319adff0090f"}), healthcare_tasks=2,
        elsewhere="occubench-153c260a856a",
    )


@pytest.fixture(params=["mini", "sample"])
def occubench(request: pytest.FixtureRequest) -> OccuBenchRelease:
    """Each OccuBench-format release: the project's own small one, then the real sample when present."""
    return MINI_RELEASE if request.param == "mini" else _sample_release()


@pytest.fixture
def occubench_root(occubench: OccuBenchRelease) -> Path:
    return occubench.root


@pytest.fixture
def occubench_sample() -> OccuBenchRelease:
    """The real OccuBench sample only, for assertions about that release (64 tasks)."""
    return _sample_release()


_SCENARIO: dict[str, Any] = {
    "id": "example-refill-desk",
    "name": "Prescription refill desk",
    "category": "Healthcare & Life Sciences",
    "domain": "Pharmacy",
    "occupation": "Pharmacy technician",
    "summary": "Check refill requests against the prescription record and dispense when allowed.",
    "version": "1",
    "rules": "A refill is allowed only while refills_left > 0. Dispensing decrements refills_left by one.",
    "tools": [
        {
            "name": "get_prescription",
            "description": "Read one prescription by id.",
            "input_schema": {
                "type": "object",
                "properties": {"rx_id": {"type": "integer"}},
                "required": ["rx_id"],
                "additionalProperties": False,
            },
            "output_schema": {
                "type": "object",
                "properties": {
                    "rx_id": {"type": "integer"},
                    "drug": {"type": "string"},
                    "refills_left": {"type": "integer"},
                },
            },
            "example_output": {"rx_id": 101, "drug": "amoxicillin 500 mg", "refills_left": 2},
        },
        {
            "name": "dispense",
            "description": "Dispense one refill.",
            "input_schema": {
                "type": "object",
                "properties": {"rx_id": {"type": "integer"}, "quantity": {"type": "integer", "minimum": 1}},
                "required": ["rx_id", "quantity"],
            },
            "output_schema": {
                "type": "object",
                "properties": {"status": {"type": "string", "enum": ["dispensed", "refused"]}},
                "required": ["status"],
            },
        },
    ],
    "state_descriptions": {"prescriptions": "Prescriptions by id, with drug and refills left."},
    "initial_state": {"prescriptions": {"101": {"drug": "amoxicillin 500 mg", "refills_left": 2}}},
    "tasks": [
        {
            "id": "example-refill-desk/one-refill",
            "title": "Dispense one refill",
            "instruction": "Dispense one refill of prescription 101 (quantity 21) if refills remain.",
            "difficulty": 1,
            "rubric": {
                "items": [
                    {
                        "id": "refill-counted",
                        "kind": "state",
                        "description": "One refill was used.",
                        "checks": [{"pointer": "/prescriptions/101/refills_left", "op": "eq", "value": 1}],
                    },
                    {
                        "id": "read-first",
                        "kind": "tool_call",
                        "description": "The prescription was read before dispensing.",
                        "checks": [{"tool": "get_prescription", "before": "dispense"}],
                    },
                ]
            },
            "reference_solution": [
                {
                    "tool": "get_prescription",
                    "arguments": {"rx_id": 101},
                    "observation": {"rx_id": 101, "drug": "amoxicillin 500 mg", "refills_left": 2},
                },
                {
                    "tool": "dispense",
                    "arguments": {"rx_id": 101, "quantity": 21},
                    "observation": {"status": "dispensed"},
                    "state_patch": [{"op": "replace", "path": "/prescriptions/101/refills_left", "value": 1}],
                },
            ],
            "final_answer": "Dispensed 21 tablets; 1 refill left.",
        }
    ],
}


@pytest.fixture
def scenario_data() -> Callable[[], dict[str, Any]]:
    """A factory for a fresh copy of a small scenario that passes every check."""
    return lambda: copy.deepcopy(_SCENARIO)


@pytest.fixture
def write_scenario_yaml(tmp_path: Path) -> Callable[..., Path]:
    """Write scenario data (or raw text) as a YAML file under tmp_path and return its path."""

    def write(data: dict[str, Any] | str, name: str = "scenario.yaml") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture(autouse=True)
def isolated_default_cache(tmp_path, monkeypatch):
    """Point the process default cache at a fresh file so tests never share or touch ~/.cache."""
    monkeypatch.delenv("OCCUSIM_NO_CACHE", raising=False)
    monkeypatch.delenv("OCCUSIM_LLM_RETRIES", raising=False)
    previous = default_cache()
    cache = ResponseCache(tmp_path / "default-cache.sqlite")
    set_default_cache(cache)
    yield cache
    cache.close()
    set_default_cache(previous)


@pytest.fixture(scope="session")
def local_model() -> str:
    """The bundled local model, loaded once per test session (the server is a per-process singleton)."""
    asyncio.run(start_local_model("local"))
    return "local"
