"""Fixtures for judge tests: a task mixing every item kind, a recorded episode, scripted judge models."""

from __future__ import annotations

import pytest

from occusim.environments import EpisodeRecord, InjectedFault, Scenario, StepRecord, Task

SCENARIO = {
    "id": "customs-desk",
    "name": "Customs release desk",
    "category": "Public Service & Governance",
    "domain": "border clearance",
    "occupation": "customs officer",
    "summary": "Clears inbound shipments.",
    "rules": "Duty is 5% of the declared value. Identity must be verified before release.",
    "tools": [
        {"name": "lookup_shipment", "description": "Find a shipment.", "input_schema": {"type": "object"}},
        {
            "name": "verify_identity",
            "description": "Verify the importer.",
            "input_schema": {"type": "object"},
        },
        {"name": "release_shipment", "description": "Release it.", "input_schema": {"type": "object"}},
    ],
    "state_descriptions": {"shipments": "inbound shipments"},
    "initial_state": {"shipments": {"SH-1": {"status": "held", "value": 6250}}},
}

TASK = {
    "id": "customs-desk/release-sh1",
    "scenario": "customs-desk",
    "title": "Release SH-1",
    "instruction": "Verify the importer of SH-1, release it and report the duty.",
    "difficulty": 2,
    "rubric": {
        "items": [
            {
                "id": "released",
                "kind": "state",
                "description": "SH-1 is released",
                "weight": 2,
                "checks": [{"pointer": "/shipments/SH-1/status", "op": "eq", "value": "released"}],
            },
            {
                "id": "order",
                "kind": "tool_call",
                "description": "identity verified before release",
                "checks": [{"tool": "release_shipment", "after": "verify_identity"}],
            },
            {
                "id": "answer",
                "kind": "llm",
                "description": "the final answer",
                "checks": [
                    "The final answer states a duty of 312.50",
                    "The final answer names shipment SH-1",
                ],
            },
        ],
        "exemplars": [
            {
                "item_id": "answer",
                "excerpt": "Final answer: duty 300",
                "passed": False,
                "explanation": "wrong duty",
            }
        ],
    },
    "verification_plan": "1. Identity verified. 2. SH-1 released. 3. Duty of 312.50 reported.",
}


@pytest.fixture
def scenario() -> Scenario:
    return Scenario.model_validate(SCENARIO)


@pytest.fixture
def task() -> Task:
    return Task.model_validate(TASK)


@pytest.fixture
def record() -> EpisodeRecord:
    return EpisodeRecord(
        id="ep-42",
        task_id=TASK["id"],
        scenario_id="customs-desk",
        initial_state={"shipments": {"SH-1": {"status": "held", "value": 6250}}},
        state={"shipments": {"SH-1": {"status": "released", "value": 6250}}},
        steps=[
            StepRecord(
                index=0, tool="lookup_shipment", arguments={"id": "SH-1"}, observation={"value": 6250}
            ),
            StepRecord(
                index=1,
                tool="verify_identity",
                arguments={"id": "SH-1"},
                observation={"error": {"code": "HTTP_500", "message": "internal error"}},
                is_error=True,
                fault=InjectedFault(kind="explicit", label="http_500"),
            ),
            StepRecord(
                index=2, tool="verify_identity", arguments={"id": "SH-1"}, observation={"verified": True}
            ),
            StepRecord(
                index=3,
                tool="release_shipment",
                arguments={"id": "SH-1"},
                observation={"released": True, "items": [{"sku": "A"}]},
                true_observation={"released": True, "items": [{"sku": "A"}, {"sku": "B"}]},
                fault=InjectedFault(kind="implicit", label="truncate_list", detail="items cut to 1"),
            ),
        ],
        final_answer="SH-1 released; duty 312.50.",
    )
