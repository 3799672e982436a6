"""A small triage scenario and a deterministic world model that simulates it correctly."""

from __future__ import annotations

import copy
import json
from typing import Any

from occusim.environments import Catalog, Scenario
from occusim.llm import scripted_model
from occusim.server import Episode, EpisodeService, Store

from ._prompts import tracked_call

PATIENT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "name": {"type": "string"},
        "priority": {"type": "integer", "minimum": 1, "maximum": 5},
        "notes": {"type": "string"},
        "ward": {"type": "string"},
    },
    "required": ["id", "name", "priority"],
}

TRIAGE: dict[str, Any] = {
    "id": "triage-desk",
    "name": "Emergency Triage Desk",
    "category": "Healthcare & Life Sciences",
    "domain": "Emergency medicine",
    "occupation": "Triage nurse",
    "summary": "Assign priorities to waiting patients.",
    "rules": "Priorities run from 1 (immediate) to 5 (non-urgent). Unknown patient ids return an error.",
    "tools": [
        {
            "name": "list_patients",
            "description": "List the waiting patients.",
            "input_schema": {"type": "object", "properties": {}, "additionalProperties": False},
            "output_schema": {
                "type": "object",
                "properties": {"patients": {"type": "array", "items": PATIENT}, "count": {"type": "integer"}},
                "required": ["patients"],
            },
        },
        {
            "name": "get_patient",
            "description": "Read one patient's record.",
            "input_schema": {
                "type": "object",
                "properties": {"patient_id": {"type": "string", "pattern": "^P[0-9]+$"}},
                "required": ["patient_id"],
                "additionalProperties": False,
            },
            "output_schema": PATIENT,
        },
        {
            "name": "set_priority",
            "description": "Set a patient's triage priority.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "patient_id": {"type": "string", "pattern": "^P[0-9]+$"},
                    "priority": {"type": "integer", "minimum": 1, "maximum": 5},
                },
                "required": ["patient_id", "priority"],
                "additionalProperties": False,
            },
            "output_schema": {
                "type": "object",
                "properties": {"ok": {"type": "boolean"}, "patient_id": {"type": "string"},
                               "priority": {"type": "integer"}},
                "required": ["ok", "patient_id", "priority"],
            },
        },
    ],
    "state_descriptions": {"patients": "Waiting patients with their priority.", "log": "Priority changes."},
    "initial_state": {
        "patients": [
            {"id": "P1", "name": "Ana Ruiz", "priority": 3, "notes": "chest pain", "ward": "A"},
            {"id": "P2", "name": "Ben Okafor", "priority": 4, "notes": "sprained ankle", "ward": "B"},
            {"id": "P3", "name": "Chen Wei", "priority": 5, "notes": "sore throat", "ward": "B"},
        ],
        "log": [],
    },
    "state_schema": {
        "type": "object",
        "properties": {"patients": {"type": "array", "items": PATIENT}, "log": {"type": "array"}},
        "required": ["patients", "log"],
    },
    "tasks": [
        {
            "id": "triage-desk/chest-pain",
            "title": "Prioritise the chest pain",
            "instruction": "Give the patient with chest pain priority 1.",
            "difficulty": 1,
            "max_steps": 12,
            "rubric": {"items": [{"id": "p1", "kind": "state", "description": "P1 is priority 1",
                                   "checks": [{"pointer": "/patients/0/priority", "op": "eq", "value": 1}]}]},
            "reference_solution": [
                {"tool": "list_patients", "observation": {"patients": []}},
                {"tool": "set_priority", "arguments": {"patient_id": "P1", "priority": 1},
                 "observation": {"ok": True, "patient_id": "P1", "priority": 1}},
            ],
        },
        {
            "id": "triage-desk/short",
            "title": "A task with a tight step limit",
            "instruction": "Look at the queue.",
            "difficulty": 1,
            "max_steps": 2,
            "verification_plan": "The agent listed the patients.",
        },
    ],
}

CHEST_PAIN = "triage-desk/chest-pain"


def triage_scenario(**overrides: Any) -> Scenario:
    data = copy.deepcopy(TRIAGE)
    data.update(overrides)
    return Scenario.model_validate(data)


def triage_catalog(**overrides: Any) -> Catalog:
    catalog = Catalog()
    errors = catalog.add(triage_scenario(**overrides), "tests.helpers")
    if errors:
        raise ValueError(f"the triage scenario does not validate: {errors}")
    return catalog


def simulate_triage(tool: str, arguments: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """The correct answer to one call: {"observation", "state_patch"}."""
    patients = state.get("patients", [])
    if tool == "list_patients":
        return {"observation": {"patients": patients, "count": len(patients)}, "state_patch": []}
    index = next((i for i, p in enumerate(patients) if p["id"] == arguments.get("patient_id")), None)
    if index is None:
        return {"observation": {"error": f"no patient {arguments.get('patient_id')}"}, "state_patch": []}
    if tool == "get_patient":
        return {"observation": patients[index], "state_patch": []}
    priority = arguments["priority"]
    return {
        "observation": {"ok": True, "patient_id": arguments["patient_id"], "priority": priority},
        "state_patch": [
            {"op": "replace", "path": f"/patients/{index}/priority", "value": priority},
            {"op": "add", "path": "/log/-", "value": f"{arguments['patient_id']}->{priority}"},
        ],
    }


class TriageModel:
    """A scripted world model that answers tracked-mode prompts correctly by reading them.

    `replies` are answered first, in order (text or JSON-able values), to script bad answers; every request
    is kept in `requests` as (messages, request) for assertions. A reply may be an exception to raise.
    """

    def __init__(self, replies: list[Any] | None = None, name: str | None = None) -> None:
        self.replies = list(replies or [])
        self.requests: list[tuple[list[dict], dict]] = []
        self.model = scripted_model(self, name=name)

    @property
    def calls(self) -> int:
        return len(self.requests)

    def __call__(self, messages: list[dict], request: dict) -> str:
        self.requests.append((messages, request))
        if self.replies:
            reply = self.replies.pop(0)
            if isinstance(reply, BaseException):
                raise reply
            return reply if isinstance(reply, str) else json.dumps(reply)
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        tracked = tracked_call(prompt)
        if tracked is not None:
            return json.dumps(simulate_triage(*tracked))
        # History mode: the last user turn is the action; answer from the scenario's initial state.
        call = json.loads(messages[-1]["content"])
        return json.dumps(simulate_triage(call["name"], call["arguments"], TRIAGE["initial_state"])["observation"])


async def start_episode(store: Store, model: TriageModel | str, task_id: str = CHEST_PAIN,
                        catalog: Catalog | None = None, **options: Any) -> Episode:
    """A new episode of a triage task on `store`, simulated by `model`."""
    service = EpisodeService(catalog or triage_catalog(), store,
                             world_model=model.model if isinstance(model, TriageModel) else model)
    return await service.create(task_id, **options)
