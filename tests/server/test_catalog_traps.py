"""A careless agent that falls into a task's trap fails the rubric item written for it.

Each case replays a bundled task's reference solution with the one step a careless agent gets wrong
(through the runtime, the world model scripted to answer with the given observation and patch), and checks
that the item guarding that trap fails while the items the agent still got right keep passing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from occusim.environments import ReferenceStep, load_catalog
from occusim.judge import judge
from occusim.server import EpisodeService, Store
from tests.helpers import golden_world, play

CATALOG = load_catalog()
NOW_2025_11 = "2025-11-06T10:00:00-05:00"
OFFICER = "M. Okonkwo, Canvass Reconciliation Officer"


def step(
    tool: str, arguments: dict[str, Any], observation: dict[str, Any], patch: list[dict[str, Any]]
) -> ReferenceStep:
    return ReferenceStep(tool=tool, arguments=arguments, observation=observation, state_patch=patch)


def replace_step(
    steps: list[ReferenceStep], match: Callable[[ReferenceStep], bool], new: list[ReferenceStep]
):
    index = next(i for i, s in enumerate(steps) if match(s))
    return steps[:index] + new + steps[index + 1 :]


def certify_unexplained_precinct(steps: list[ReferenceStep]) -> list[ReferenceStep]:
    attestation = "Difference of 5 is under 0.5 % of ballots cast."
    certify = step(
        "certify_precinct",
        {"precinct_id": "P-305", "attestation": attestation},
        {"precinct_id": "P-305", "status": "certified", "certified_at": NOW_2025_11},
        [
            {"op": "replace", "path": "/precincts/P-305/status", "value": "certified"},
            {"op": "add", "path": "/precincts/P-305/certified_by", "value": OFFICER},
            {"op": "add", "path": "/precincts/P-305/certified_at", "value": NOW_2025_11},
            {"op": "add", "path": "/precincts/P-305/attestation", "value": attestation},
        ],
    )
    return replace_step(steps, lambda s: s.tool == "refer_to_canvass_board", [certify])


def electronic_crossmatch_despite_history(steps: list[ReferenceStep]) -> list[ReferenceStep]:
    def electronic(s: ReferenceStep) -> ReferenceStep:
        if s.tool != "crossmatch":
            return s
        result = {**s.observation, "method": "electronic"}
        return step(
            "crossmatch",
            {**s.arguments, "method": "electronic"},
            result,
            [{"op": "add", "path": s.state_patch[0]["path"], "value": result}],
        )

    return [electronic(s) for s in steps]


def ct_from_the_analyzer(steps: list[ReferenceStep]) -> list[ReferenceStep]:
    # Trusting the analyzer's 1.1 mg/L, the careless operator sees a CT ratio of 1.65 and changes nothing.
    return [s for s in steps if s.tool != "set_chlorine_dose"]


def royalty_for_the_fifth_copy(steps: list[ReferenceStep]) -> list[ReferenceStep]:
    pay = step(
        "pay_copyright_fee",
        {"request_id": "ILL-3102", "issn": "1934-0522"},
        {"request_id": "ILL-3102", "issn": "1934-0522", "fee_usd": 21.0, "transaction": "CCC-3102"},
        [
            {
                "op": "add",
                "path": "/copyright_payments/-",
                "value": {
                    "request_id": "ILL-3102",
                    "issn": "1934-0522",
                    "fee_usd": 21.0,
                    "transaction": "CCC-3102",
                    "paid_on": "2025-10-14",
                },
            }
        ],
    )
    first_submit = next(s for s in steps if s.tool == "submit_ill_request")
    return replace_step(steps, lambda s: s is first_submit, [pay, first_submit])


def setback_flagged_on_a_low_deck(steps: list[ReferenceStep]) -> list[ReferenceStep]:
    comment = {
        "code_section": "Harbor City zoning, R-1 side setback",
        "severity": "correction",
        "comment": "The deck is 3 ft from the side lot line; R-1 requires 5 ft.",
    }
    permit = "BP-25-0412"
    summary = "Side setback 3 ft < 5 ft."
    reviewer = "A. Whitfield, ICC R3 Residential Plans Examiner"
    now = "2025-08-19T09:00:00-07:00"
    careless = [
        step(
            "add_review_comment",
            {"permit_id": permit, "item": "setback", **comment},
            {"permit_id": permit, "item": "setback", "severity": "correction", "open_corrections": 1},
            [
                {
                    "op": "add",
                    "path": f"/permits/{permit}/comments/setback",
                    "value": {**comment, "by": reviewer, "at": now},
                }
            ],
        ),
        step(
            "issue_decision",
            {"permit_id": permit, "decision": "corrections_required", "summary": summary},
            {"permit_id": permit, "status": "corrections_required", "decided_at": now},
            [
                {"op": "replace", "path": f"/permits/{permit}/status", "value": "corrections_required"},
                {"op": "add", "path": f"/permits/{permit}/decision_summary", "value": summary},
                {"op": "add", "path": f"/permits/{permit}/decided_by", "value": reviewer},
                {"op": "add", "path": f"/permits/{permit}/decided_at", "value": now},
            ],
        ),
    ]
    return replace_step(steps, lambda s: s.tool == "issue_decision", careless)


def combination_product_verified_as_written(steps: list[ReferenceStep]) -> list[ReferenceStep]:
    return [
        s for s in steps if not (s.tool == "contact_prescriber" and s.arguments["order_id"] == "ORD-5202")
    ]


def rerate_without_resetting_the_relief_valve(steps: list[ReferenceStep]) -> list[ReferenceStep]:
    kept = [s for s in steps if not (s.tool == "create_work_order" and s.arguments["task"] == "prv_reset")]

    def renumbered(s: ReferenceStep) -> ReferenceStep:
        if s.tool != "create_work_order":
            return s
        value = {**s.state_patch[0]["value"], "wo": "WO-25001"}
        return step(
            s.tool, s.arguments, {**s.observation, "wo": "WO-25001"}, [{**s.state_patch[0], "value": value}]
        )

    return [renumbered(s) for s in kept]


@dataclass(frozen=True)
class Trap:
    task_id: str
    careless: Callable[[list[ReferenceStep]], list[ReferenceStep]]
    fails: frozenset[str]
    still_passes: frozenset[str]


TRAPS = [
    Trap(
        "ballot-reconciliation-officer/backup-roster-and-unexplained",
        certify_unexplained_precinct,
        frozenset({"p305-referred"}),
        frozenset({"p217-certified"}),
    ),
    Trap(
        "blood-bank-technologist/historical-anti-jka",
        electronic_crossmatch_despite_history,
        frozenset({"jka-negative-unit", "history-first"}),
        frozenset({"untyped-not-given"}),
    ),
    Trap(
        "water-treatment-operator/ct-from-grab-sample",
        ct_from_the_analyzer,
        frozenset({"dose-raised", "grab-first"}),
        frozenset({"logged"}),
    ),
    Trap(
        "interlibrary-loan-librarian/rule-of-five",
        royalty_for_the_fifth_copy,
        frozenset({"ill3103-royalty"}),
        frozenset({"ill3102-ccg"}),
    ),
    Trap(
        "building-plan-reviewer/compliant-deck",
        setback_flagged_on_a_low_deck,
        frozenset({"approved"}),
        frozenset({"reviewed"}),
    ),
    Trap(
        "order-verification-pharmacist/acetaminophen-all-sources",
        combination_product_verified_as_written,
        frozenset({"combination-replaced", "reviewed-first"}),
        frozenset({"acetaminophen-capped", "cefazolin-verified"}),
    ),
    Trap(
        "pressure-vessel-inspector/below-minimum-rerate",
        rerate_without_resetting_the_relief_valve,
        frozenset({"prv-reset"}),
        frozenset({"rerated", "short-interval", "prv-checked"}),
    ),
]


@pytest.fixture
def service(sqlite_store: Store) -> EpisodeService:
    return EpisodeService(CATALOG, sqlite_store)


@pytest.mark.parametrize("trap", TRAPS, ids=[t.task_id for t in TRAPS])
async def test_the_trap_fails_its_item_and_spares_what_was_done_right(service, trap: Trap):
    task = CATALOG.tasks[trap.task_id]
    steps = trap.careless(list(task.reference_solution))
    assert steps != task.reference_solution
    world = golden_world(task, name=f"careless-{task.id.replace('/', '-')}", steps=steps)
    episode = await service.create(task.id, world_model=world)
    await play(episode, steps)
    record = await episode.submit(task.final_answer or "", run_judge=False)

    verdict = await judge(task, record, scenario=episode.scenario, llm_items="skip")
    passed = {item.id: item.passed for item in verdict.items if item.kind in ("state", "tool_call")}
    assert {item for item, ok in passed.items() if not ok} >= trap.fails, passed
    assert all(passed[item] for item in trap.still_passes), passed
    assert verdict.passed is False, (verdict.score, verdict.blocking_failures)
