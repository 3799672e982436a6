"""Voting: read each vote's verdicts back by check id, count abstentions, decide by strict majority.

A vote abstains on a check when its output cannot be parsed, was cut short, misses the check, gives a
non-boolean `passed`, or answers the check twice with opposite verdicts. An abstention counts as a fail
vote (OccuBench's rule); equal counts are a tie: not passed, and flagged. A check no vote could answer
is unjudged (or failed, under the `fail` rule), never decided by the votes it does not have.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import permutations
from typing import Any

from occusim.llm import LLMOutputError, derived_seed, parse_json_output

from ._prompt import JudgedCheck
from ._settings import NoUsableVote
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


def vote_seed(seed: int, vote: int, attempt: int = 0) -> int:
    """The seed sent with request `attempt` of vote `vote`: distinct per vote and attempt, 31 bits."""
    return derived_seed(seed, "judge-vote", vote, attempt)


def read_vote(
    text: str,
    vote: int,
    checks: Sequence[JudgedCheck],
    step_indexes: set[int],
    *,
    cut_short: bool = False,
) -> dict[str, Vote]:
    """One Vote per check id, abstaining where the output does not answer that check cleanly.

    `cut_short` (the provider stopped at its token limit) makes the whole answer unusable: a verdict read
    from a truncated answer may be missing the words that would have changed it.
    """
    positions = {check.id: position for position, check in enumerate(checks)}

    def abstain(check_id: str, why: str) -> Vote:
        return Vote(vote=vote, passed=None, reason=f"abstained: {why}", position=positions[check_id])

    if cut_short:
        return {check.id: abstain(check.id, "the answer was cut short at the token limit") for check in checks}
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


def tally(
    check: JudgedCheck, votes: Sequence[Vote], *, on_no_usable_vote: NoUsableVote = "unjudged"
) -> CheckVerdict:
    """The check's verdict from its votes, by strict majority; an abstention is a fail vote.

    When no vote is usable the judge could not decide: the check is unjudged (passed None), or failed
    with `on_no_usable_vote="fail"` (OccuBench's verifier); its abstentions are counted either way.
    """
    ayes = [v for v in votes if v.passed is True]
    noes = [v for v in votes if v.passed is False]
    abstentions = len(votes) - len(ayes) - len(noes)
    base = CheckVerdict(index=check.index, id=check.id, description=check.text, passed=None,
                        votes=list(votes), abstentions=abstentions)
    if not ayes and not noes:
        last = votes[-1].reason.removeprefix("abstained: ") if votes else "no vote was cast"
        if on_no_usable_vote == "fail":
            reason = f"failed: none of the {len(votes)} votes gave a usable answer ({last})"
            return base.model_copy(update={"passed": False, "reason": reason})
        reason = f"not judged: none of the {len(votes)} votes gave a usable answer ({last})"
        return base.model_copy(update={"reason": reason, "unjudged": True})
    fails = len(noes) + abstentions
    counts = f"{len(ayes)} pass, {len(noes)} fail, {abstentions} abstained"
    if len(ayes) == fails:
        winners: list[Vote] = [*ayes, *noes]
        reason = f"tie ({counts}, abstentions count as fails): not passed"
        if winners[0].reason:
            reason += f"; first reason: {winners[0].reason}"
        return base.model_copy(update={"passed": False, "reason": reason, "tie": True,
                                       "evidence_steps": _evidence(winners)})
    if len(ayes) > fails:
        return base.model_copy(update={"passed": True, "reason": ayes[0].reason, "evidence_steps": _evidence(ayes)})
    reason = noes[0].reason if noes else f"failed ({counts}, abstentions count as fails)"
    if noes and abstentions:
        reason += f" ({counts}, abstentions count as fails)"
    return base.model_copy(update={"passed": False, "reason": reason, "evidence_steps": _evidence(noes)})


def _evidence(votes: Sequence[Vote]) -> list[int]:
    return sorted({step for vote in votes for step in vote.evidence_steps})
