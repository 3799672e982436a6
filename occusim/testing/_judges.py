"""Scripted judge models: answers built per vote from the checks each vote presents."""

from __future__ import annotations

import json
from collections.abc import Callable

from occusim.judge import MAX_REASKS, MAX_VOTES, vote_seed
from occusim.llm import ScriptedReply, scripted_model

# What a per-vote answer function returns: a JSON-able answer, raw text, or a full reply.
Answer = dict | str | ScriptedReply


def presented_ids(request: dict) -> list[str]:
    """The check ids in the order this vote presents them (the schema requires them in that order)."""
    ids: list[str] = request["response_schema"]["properties"]["verdicts"]["required"]
    return ids


def ballot(request: dict, decide: Callable[[str], bool | None], reason: str = "because") -> dict:
    """A well-formed answer keyed by check id; `decide` returning None leaves that check out."""
    verdicts = {}
    for check_id in presented_ids(request):
        passed = decide(check_id)
        if passed is not None:
            verdicts[check_id] = {"reason": f"{reason} {check_id}", "evidence_steps": [3], "passed": passed}
    return {"verdicts": verdicts}


class ScriptedJudge:
    """A judge model that answers vote by vote from a list of per-vote answer functions.

    Votes run concurrently; which vote (and which re-ask of it) a request is, is read back from its seed,
    so `seed` must be the seed given to judge(). Each answer function sees the request with `vote` and
    `attempt` added.
    """

    def __init__(self, *answers: Callable[[dict], Answer], seed: int = 0) -> None:
        self.answers = list(answers)
        self.requests: list[dict] = []
        self.messages: list[list[dict]] = []
        self.seeds = {
            vote_seed(seed, vote, attempt): (vote, attempt)
            for vote in range(MAX_VOTES)
            for attempt in range(MAX_REASKS + 1)
        }
        self.model = scripted_model(self.respond)

    def respond(self, messages: list[dict], request: dict) -> Answer:
        vote, attempt = self.seeds[request["seed"]]
        request = {**request, "vote": vote, "attempt": attempt}
        self.requests.append(request)
        self.messages.append(messages)
        return self.answers[vote % len(self.answers)](request)

    def orders(self) -> list[list[str]]:
        first = sorted((r for r in self.requests if r["attempt"] == 0), key=lambda r: r["vote"])
        return [presented_ids(r) for r in first]

    def requests_of(self, vote: int) -> list[dict]:
        return sorted((r for r in self.requests if r["vote"] == vote), key=lambda r: r["attempt"])


def passes(request: dict) -> dict:
    return ballot(request, lambda check_id: True, reason="pass")


def fails_answer(request: dict) -> dict:
    """Fails the first check of the `answer` item, passes the rest."""
    return ballot(request, lambda check_id: check_id != "answer#0", reason="fail")


def garbage(request: dict) -> str:
    return "I think it mostly went fine, hard to say."


def cut_short(request: dict) -> ScriptedReply:
    """A well-formed passing answer, but reported as stopped at the token limit."""
    return ScriptedReply(text=json.dumps(passes(request)), finish_reason="length")


def garbage_then(answer: Callable[[dict], Answer], bad_attempts: int = 1) -> Callable[[dict], Answer]:
    """Unparseable for the first `bad_attempts` requests of a vote, then `answer`."""

    def respond(request: dict) -> Answer:
        return garbage(request) if request["attempt"] < bad_attempts else answer(request)

    return respond


def passing_judge(name: str | None = None) -> str:
    """A judge model passing every llm check it is shown."""

    def respond(messages: list[dict], request: dict) -> dict:
        return {"verdicts": {check_id: {"passed": True, "reason": "fine", "evidence_steps": []}
                             for check_id in presented_ids(request)}}

    return scripted_model(respond, name=name)
