"""A scripted author model for `occusim generate`: it answers each stage (told apart by the title of the response
schema) with the next queued answer, then with a sound part of a small refill-desk scenario, and a world model
that answers each reference call with its golden step."""

from __future__ import annotations

import copy
import itertools
import json
from collections import defaultdict
from typing import Any

from occusim.llm import scripted_model

STAGE_TITLES = {
    "Brief": "brief",
    "ToolsPart": "tools",
    "TasksPart": "tasks",
    "RubricsPart": "rubrics",
    "ReferencesPart": "references",
}

RX = {
    "type": "object",
    "properties": {"drug": {"type": "string"}, "refills_left": {"type": "integer"}},
    "required": ["drug", "refills_left"],
}

SOUND_PARTS: dict[str, dict[str, Any]] = {
    "brief": {
        "id": "refill-desk",
        "name": "Prescription refill desk",
        "domain": "Pharmacy",
        "summary": "Check refill requests against the prescription record and dispense when allowed.",
        "rules": [
            {
                "rule": "A refill is dispensed only while refills_left is above 0; each refill lowers it by one.",
                "source": "21 CFR 1306.22(a)",
                "numbers": ["0 refills left"],
            }
        ],
        "hidden_fields": ["refills_left of each prescription"],
        "traps": ["a second prescription for the same drug has no refills left"],
        "unsure": ["whether the state caps refills lower than the federal rule"],
    },
    "tools": {
        "tools": [
            {
                "name": "get_prescription",
                "description": "Read one prescription by id.",
                "read_only": True,
                "input_schema": {
                    "type": "object",
                    "properties": {"rx_id": {"type": "string"}},
                    "required": ["rx_id"],
                },
                "output_schema": RX,
            },
            {
                "name": "dispense",
                "description": "Dispense one refill of a prescription.",
                "read_only": False,
                "writes": ["/prescriptions"],
                "input_schema": {
                    "type": "object",
                    "properties": {"rx_id": {"type": "string"}},
                    "required": ["rx_id"],
                },
                "output_schema": {
                    "type": "object",
                    "properties": {"status": {"type": "string"}},
                    "required": ["status"],
                },
            },
        ],
        "state_descriptions": {"prescriptions": "Prescriptions by id, with the drug and the refills left."},
        "state_schema": {
            "type": "object",
            "properties": {"prescriptions": {"type": "object", "additionalProperties": RX}},
            "required": ["prescriptions"],
        },
        "initial_state": {"prescriptions": {"101": {"drug": "amoxicillin 500 mg", "refills_left": 2}}},
    },
    "tasks": {
        "tasks": [
            {
                "id": "one-refill",
                "title": "Dispense one refill",
                "difficulty": 1,
                "instruction": "Dispense one refill of prescription 101 if it may be refilled.",
                "initial_state_patch": {
                    "prescriptions": {"102": {"drug": "amoxicillin 500 mg", "refills_left": 0}}
                },
                "trap": "prescription 102, for the same drug, has no refills left",
                "final_answer": "Dispensed one refill of 101; 1 refill left.",
            }
        ],
    },
    "rubrics": {
        "rubrics": [
            {
                "task": "one-refill",
                "rubric": {
                    "items": [
                        {
                            "id": "refill-counted",
                            "kind": "state",
                            "critical": True,
                            "description": "One refill of 101 was used.",
                            "checks": [
                                {"pointer": "/prescriptions/101/refills_left", "op": "eq", "value": 1}
                            ],
                        },
                        {
                            "id": "empty-kept",
                            "kind": "state",
                            "guard": True,
                            "description": "102 was not refilled.",
                            "checks": [
                                {"pointer": "/prescriptions/102/refills_left", "op": "eq", "value": 0}
                            ],
                        },
                    ]
                },
            }
        ],
    },
    "references": {
        "references": [
            {
                "task": "one-refill",
                "reference_solution": [
                    {
                        "tool": "get_prescription",
                        "arguments": {"rx_id": "101"},
                        "observation": {"drug": "amoxicillin 500 mg", "refills_left": 2},
                    },
                    {
                        "tool": "dispense",
                        "arguments": {"rx_id": "101"},
                        "observation": {"status": "dispensed"},
                        "state_patch": [
                            {"op": "replace", "path": "/prescriptions/101/refills_left", "value": 1}
                        ],
                    },
                ],
            }
        ],
    },
}


def sound_part(stage: str) -> dict[str, Any]:
    return copy.deepcopy(SOUND_PARTS[stage])


class ScriptedAuthor:
    """Answers each stage with its queued answers first (a dict is sent as JSON, a str as it is), then with the
    sound part; `requests[stage]` keeps the messages of every call, so a test can read what was sent back."""

    def __init__(self, name: str, queued: dict[str, list[Any]] | None = None) -> None:
        self.queued: dict[str, list[Any]] = defaultdict(list, copy.deepcopy(queued or {}))
        self.requests: dict[str, list[list[dict]]] = defaultdict(list)
        self.schemas: dict[str, list[dict]] = defaultdict(list)  # the response schema of each call
        self.model = scripted_model(self.answer, name=name)

    def answer(self, messages: list[dict], request: dict) -> str:
        stage = STAGE_TITLES[request["response_schema"]["title"]]
        self.requests[stage].append(copy.deepcopy(messages))
        self.schemas[stage].append(request["response_schema"])
        reply = self.queued[stage].pop(0) if self.queued[stage] else sound_part(stage)
        return reply if isinstance(reply, str) else json.dumps(reply)

    def calls(self, stage: str) -> int:
        return len(self.requests[stage])

    def last_prompt(self, stage: str) -> str:
        """The last user message of the stage's last call."""
        return str(self.requests[stage][-1][-1]["content"])


def golden_replay_world(name: str, steps: list[dict[str, Any]], misread: int = 0) -> str:
    """A world model answering the n-th call with the n-th of `steps` (observation and patch), cycling; the first
    `misread` answers instead show a refill count that no state holds. simcheck must call it one step at a time
    (concurrency 1)."""
    answers = itertools.cycle(steps)
    left = [misread]

    def answer(messages: list[dict], request: dict) -> dict[str, Any]:
        step = next(answers)
        if left[0] > 0:
            left[0] -= 1
            return {"observation": {"drug": "amoxicillin 500 mg", "refills_left": 7}, "state_patch": []}
        return {
            "observation": copy.deepcopy(step["observation"]),
            "state_patch": copy.deepcopy(step.get("state_patch", [])),
        }

    return scripted_model(answer, name=name)


def sound_scenario_data() -> dict[str, Any]:
    """The scenario the sound parts make (it passes validate and the discrimination gates), as file data."""
    from occusim.clients._generate_draft import Draft
    from occusim.clients._generate_parts import Brief, ReferencesPart, RubricsPart, TasksPart, ToolsPart

    draft = Draft(
        "Pharmacy technician",
        "Healthcare & Life Sciences",
        Brief(**sound_part("brief")),
        ToolsPart(**sound_part("tools")),
        TasksPart(**sound_part("tasks")),
        RubricsPart(**sound_part("rubrics")),
        ReferencesPart(**sound_part("references")),
    )
    return draft.scenario_data()
