"""Shared fixtures: the OccuBench sample, a small valid scenario, an isolated response cache, the local model."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from occusim.llm import ResponseCache, default_cache, set_default_cache, start_local_model

REPO = Path(__file__).resolve().parents[1]
# The sample release sits beside the repository: <repo>/../shared/occubench.
OCCUBENCH = (REPO / ".." / "shared" / "occubench").resolve()

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
def occubench_root() -> Path:
    """The OccuBench sample release (64 tasks) that the importer tests read."""
    assert (OCCUBENCH / "eval_benchmark_solvable.jsonl").is_file(), (
        f"OccuBench sample not found at {OCCUBENCH}"
    )
    return OCCUBENCH


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
