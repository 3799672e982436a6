"""Voting: read each vote's verdicts back by check id, count abstentions, decide by strict majority.

A vote abstains on a check when its output cannot be parsed, misses the check, gives a non-boolean
`passed`, or answers the check twice with opposite verdicts. The majority is taken over the votes cast
(abstentions are counted and reported, never read as fails); equal counts, including none cast, are a tie:
not passed, and flagged.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import permutations
from typing import Any

from occusim.llm import LLMOutputError, parse_json_output

from ._prompt import JudgedCheck
from ._verdict import CheckVerdict, Vote

# Beyond this many checks there are so many orders that repeated draws practically never collide.
_ENUMERABLE = 6


def vote_orders(count: int, votes: int, seed: int) -> list[list[int]]:
    """A seeded order of `count` checks for each vote, all different while there are enough orders."""
    rng = random.Random(f"occusim-judge:{seed}:{count}")
    if count <= _ENUMERABLE:
        pool = [list(order) for order in permutations(range(count))]
        rng.shuffle(pool)
        return [pool[vote % len(pool)] for vote in range(votes)]
    orders = []
    for _ in range(votes):
        order = list(range(count))
        rng.shuffle(order)
        orders.append(order)
    return orders


def read_vote(text: str, vote: int, checks: Sequence[JudgedCheck], step_indexes: set[int]) -> dict[str, Vote]:
    """One Vote per check id, abstaining where the output does not answer that check cleanly."""
    positions = {check.id: position for position, check in enumerate(checks)}

    def abstain(check_id: str, why: str) -> Vote:
        return Vote(vote=vote, passed=None, reason=f"abstained: {why}", position=positions[check_id])

    try:
        data = parse_json_output(text)
    except LLMOutputError as error:
        return {check.id: abstain(check.id, f"unparseable output ({error})") for check in checks}
    entries = data.get("verdicts") if isinstance(data, dict) else data
    answers: dict[str, list[dict[str, Any]]] = {}
    if isinstance(entries, dict):
        answers = {
            key: [entry] for key, entry in entries.items() if key in positions and isinstance(entry, dict)
        }
    elif isinstance(entries, list):
        # Tolerated: a list of {"check_id": ..., ...} entries, as some models answer without a schema.
        for entry in entries:
            check_id = entry.get("check_id") if isinstance(entry, dict) else None
            if isinstance(check_id, str) and check_id in positions:
                answers.setdefault(check_id, []).append(entry)
    else:
        return {check.id: abstain(check.id, "the output has no `verdicts` object") for check in checks}
    out: dict[str, Vote] = {}
    for check in checks:
        given = answers.get(check.id, [])
        verdicts = [entry.get("passed") for entry in given]
        if not given:
            out[check.id] = abstain(check.id, "the output has no verdict for this check")
        elif not all(isinstance(value, bool) for value in verdicts):
            out[check.id] = abstain(check.id, "`passed` is not true or false")
        elif len(set(verdicts)) > 1:
            out[check.id] = abstain(check.id, "the output answers this check both ways")
        else:
            entry = given[0]
            evidence = entry.get("evidence_steps")
            steps = sorted(
                {i for i in evidence if isinstance(i, int) and not isinstance(i, bool) and i in step_indexes}
                if isinstance(evidence, list)
                else set()
            )
            reason = entry.get("reason")
            out[check.id] = Vote(
                vote=vote,
                passed=verdicts[0],
                reason=reason.strip() if isinstance(reason, str) else "",
                evidence_steps=steps,
                position=positions[check.id],
            )
    return out


def tally(check: JudgedCheck, votes: Sequence[Vote]) -> CheckVerdict:
    """The check's verdict from its votes, by strict majority of the votes cast."""
    ayes = [v for v in votes if v.passed is True]
    noes = [v for v in votes if v.passed is False]
    abstentions = len(votes) - len(ayes) - len(noes)
    tie = len(ayes) == len(noes)
    if tie:
        winners: list[Vote] = [*ayes, *noes]
        reason = f"tie ({len(ayes)} pass, {len(noes)} fail, {abstentions} abstained): not passed"
        if winners and winners[0].reason:
            reason += f"; first reason: {winners[0].reason}"
    else:
        winners = ayes if len(ayes) > len(noes) else noes
        reason = winners[0].reason
    return CheckVerdict(
        index=check.index,
        id=check.id,
        description=check.text,
        passed=not tie and len(ayes) > len(noes),
        reason=reason,
        evidence_steps=sorted({step for vote in winners for step in vote.evidence_steps}),
        votes=list(votes),
        tie=tie,
        abstentions=abstentions,
    )
