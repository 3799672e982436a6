"""Scripted judge models for the judge tests: answers built per vote from the checks each vote presents."""

from __future__ import annotations

from collections.abc import Callable

from occusim.llm import scripted_model


def presented_ids(request: dict) -> list[str]:
    """The check ids in the order this vote presents them (the schema requires them in that order)."""
    return request["response_schema"]["properties"]["verdicts"]["required"]


def ballot(request: dict, decide: Callable[[str], bool | None], reason: str = "because") -> dict:
    """A well-formed answer keyed by check id; `decide` returning None leaves that check out."""
    verdicts = {}
    for check_id in presented_ids(request):
        passed = decide(check_id)
        if passed is not None:
            verdicts[check_id] = {"reason": f"{reason} {check_id}", "evidence_steps": [3], "passed": passed}
    return {"verdicts": verdicts}


class ScriptedJudge:
    """A judge model that answers vote by vote from a list of per-vote answer functions."""

    def __init__(self, *answers: Callable[[dict], object]) -> None:
        self.answers = list(answers)
        self.requests: list[dict] = []
        self.messages: list[list[dict]] = []
        self.model = scripted_model(self.respond)

    def respond(self, messages: list[dict], request: dict) -> object:
        # Votes run concurrently; the vote number is recoverable from the seed (seed + vote).
        self.requests.append(request)
        self.messages.append(messages)
        return self.answers[request["seed"] % len(self.answers)](request)

    def orders(self) -> list[list[str]]:
        by_seed = sorted(self.requests, key=lambda r: r["seed"])
        return [presented_ids(r) for r in by_seed]


def passes(request: dict) -> dict:
    return ballot(request, lambda check_id: True, reason="pass")


def fails_answer(request: dict) -> dict:
    """Fails the first check of the `answer` item, passes the rest."""
    return ballot(request, lambda check_id: check_id != "answer#0", reason="fail")


def garbage(request: dict) -> str:
    return "I think it mostly went fine, hard to say."
