"""Scripted judge models: answers built per vote from the checks each vote presents."""

from __future__ import annotations

import json
import re
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


_CHECK_LINE = re.compile(r"^- check_id `(?P<id>[^`]+)` \(item: .*?\): (?P<text>.*)$", re.MULTILINE)
_EXAMPLE = re.compile(
    r"^## Example \d+(?: for item `(?P<item>[^`]+)` [^\n]*| for an item of another task)?: (?P<verdict>PASSED|FAILED)\n"
    r'<untrusted_data id="example-\d+">\n(?P<excerpt>.*?)\n</untrusted_data>',
    re.MULTILINE | re.DOTALL,
)
_FINAL_ANSWER = re.compile(r'<untrusted_data id="final-answer">\n(.*?)\n</untrusted_data>', re.DOTALL)
_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*|[a-z]{4,}")
# The share of a check's figures an answer must repeat for the lenient judge to pass it.
FIGURE_COVERAGE = 0.5
# How alike (Jaccard, on words and figures) an answer and its nearest exemplar must be to follow it, and by
# how much nearer it must be to one verdict's exemplars than to the other's.
EXEMPLAR_LIKENESS = 0.2
EXEMPLAR_MARGIN = 0.02


def _tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text.lower()))


def _figures(text: str) -> set[str]:
    return {token for token in _tokens(text) if token[0].isdigit() and len(token) > 1}


def _answer_part(excerpt: str) -> str:
    """The final answer an exemplar quotes (after "Final answer:"), or the whole excerpt."""
    head, found, answer = excerpt.partition("Final answer:")
    return answer if found else head


def _likeness(first: set[str], second: set[str]) -> float:
    return len(first & second) / len(first | second) if first | second else 0.0


def lenient_verdict(check: str, answer: str) -> bool:
    """Pass when the answer repeats most of the figures the check names: right numbers, reasoning unread."""
    figures = _figures(check)
    if not figures:
        return bool(answer.strip())
    return len(figures & _tokens(answer)) / len(figures) >= FIGURE_COVERAGE


def exemplar_verdict(answer: str, passing: list[str], failing: list[str]) -> bool | None:
    """The verdict of the exemplar nearest to the answer, when it is alike enough and clearly nearer than the
    nearest exemplar of the other verdict; None when the exemplars do not tell."""
    if not passing or not failing:
        return None
    words = _tokens(answer)
    to_pass = max(_likeness(words, _tokens(_answer_part(text))) for text in passing)
    to_fail = max(_likeness(words, _tokens(_answer_part(text))) for text in failing)
    if max(to_pass, to_fail) < EXEMPLAR_LIKENESS or abs(to_pass - to_fail) < EXEMPLAR_MARGIN:
        return None
    return to_pass > to_fail


def calibrated_ballot(messages: list[dict], request: dict) -> dict:
    """A judge that reads the prompt like a hurried grader: it checks that the answer repeats the check's
    figures (lenient: a near miss with the right numbers passes), unless an exemplar shown for the item is
    clearly the nearest to the answer, whose verdict it then follows (nearest-exemplar matching by word
    overlap). It shows that exemplars reach the judge and change its verdicts; its agreement with labels
    says nothing about a real judge's calibration."""
    user = messages[-1]["content"]
    found = _FINAL_ANSWER.search(user)
    answer = found.group(1) if found else ""
    checks = {match["id"]: match["text"] for match in _CHECK_LINE.finditer(user)}
    examples: dict[str, dict[bool, list[str]]] = {}
    for match in _EXAMPLE.finditer(user):
        if match["item"]:
            examples.setdefault(match["item"], {True: [], False: []})[match["verdict"] == "PASSED"].append(
                match["excerpt"]
            )

    def decide(check_id: str) -> bool:
        item = check_id.split("#", 1)[0]
        shown = examples.get(item, {True: [], False: []})
        taught = exemplar_verdict(answer, shown[True], shown[False])
        return taught if taught is not None else lenient_verdict(checks.get(check_id, ""), answer)

    return ballot(request, decide, reason="figures and exemplars for")


def calibrated_judge(name: str | None = None) -> str:
    """A scripted judge model answering every vote with `calibrated_ballot` (it copies the nearest exemplar)."""
    return scripted_model(calibrated_ballot, name=name)
