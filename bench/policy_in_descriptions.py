"""List tool descriptions and task instructions that state policy, and count the tasks whose trap they give away.

    .venv/bin/python bench/policy_in_descriptions.py [--verbose] [PATH ...]   (default: the bundled catalog)

A tool's description is shown to the agent; a scenario's rules only to the world model. A sentence states
policy, rather than what the tool does, when it is normative (must, only, never, do not, required, governs,
policy, procedure, ...) or when it sets a decision threshold (above / at most / within ... a number) whose
number also appears in the scenario's rules. A task's policy is stated in a visible description when such a
sentence, in any of its scenario's tool descriptions, names a value that the task's critical or guard items
test (a number, an enum member, an argument value). Instructions are read the same way.

The detector is measured against descriptions labelled by hand before it was written
(`policy_in_descriptions_labels.yaml`: a random sample of the catalog and the three descriptions rewritten
first, in their earlier wording).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from occusim.environments import LlmItem, Scenario, StateItem, Task, ToolCallItem, validate_sources

LABELS = Path(__file__).with_name("policy_in_descriptions_labels.yaml")

NORMATIVE = re.compile(
    r"\b(must|never|do not|don't|not to|only|requires|governs?|may not|may only|may exceed|shall|should)\b"
    r"|\brequired\b(?=\s+(?:when|for|before|by|if|to|under)\b|\s*[).,;:]|\s*$)"
    r"|\bbefore\b.*\bmay\b",
    re.IGNORECASE,
)
# "policy", "rules", "procedure" and "SOP" name a document; they state one where they introduce it
# ("Policy: ...", "Severity policy - ..."), except in a sentence that says what a read tool returns.
INTRODUCED = re.compile(r"\b(policy|rules?|procedure|SOP)\b(?:\s+[\w.]+)?\s*(?::|-|–)", re.IGNORECASE)
READS = re.compile(r"^(Read|List|Show|Search|Look up|Get)\b")
THRESHOLD = re.compile(
    r"(\babove|\bbelow|\bexceed\w*|\bat most|\bat least|\bwithin|\bup to|\bmore than|\bless than|\bover|\bunder"
    r"|\blesser of|\bgreater of|\bno later than|>=|<=|≥|≤|>|<)\W+(?:\w+\W+){0,3}?(\d+(?:\.\d+)?)",
    re.IGNORECASE,
)
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]*\d)")
SENTENCE_END = re.compile(r"(?<=[.;:!?])\s+(?=[A-Za-z(\"'])")


@dataclass(frozen=True)
class Finding:
    """A sentence that states policy, and why."""

    sentence: str
    reasons: tuple[str, ...]


def sentences(text: str) -> list[str]:
    return [part.strip() for part in SENTENCE_END.split(" ".join(text.split())) if part.strip()]


def numbers_in(text: str) -> set[float]:
    return {float(match) for match in NUMBER.findall(text)}


def policy_sentences(text: str, rules: str) -> list[Finding]:
    """The sentences of `text` that are normative or set a threshold whose number the rules also state."""
    in_rules = numbers_in(rules)
    found = []
    for sentence in sentences(text):
        reasons = [f"normative '{m.group(0).split()[0].lower()}'" for m in NORMATIVE.finditer(sentence)]
        if not READS.match(sentence):
            reasons += [f"introduces '{m.group(1)}'" for m in INTRODUCED.finditer(sentence)]
        reasons += [
            f"threshold '{m.group(0)}'" for m in THRESHOLD.finditer(sentence) if float(m.group(2)) in in_rules
        ]
        if reasons:
            found.append(Finding(sentence, tuple(dict.fromkeys(reasons))))
    return found


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for inner in value.values():
            yield from _leaves(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _leaves(inner)
    else:
        yield value


def tested_values(task: Task) -> tuple[set[float], set[str]]:
    """Numbers and strings that the task's critical and guard items test."""
    raw: list[Any] = []
    texts: list[str] = []
    for item in task.rubric.items:
        if not (item.critical or (isinstance(item, StateItem) and item.guard)):
            continue
        if isinstance(item, StateItem):
            for check in item.checks:
                raw += [check.value, check.match, [nested.model_dump() for nested in check.where or []]]
        elif isinstance(item, ToolCallItem):
            for call in item.checks:
                raw += [call.arguments_match, [nested.model_dump() for nested in call.arguments_where or []]]
        elif isinstance(item, LlmItem):
            texts += item.checks
    numbers: set[float] = set()
    strings: set[str] = set()
    for leaf in _leaves(raw):
        if isinstance(leaf, bool) or leaf is None:
            continue
        if isinstance(leaf, int | float):
            numbers.add(float(leaf))
        elif isinstance(leaf, str) and len(leaf) >= 3 and not leaf.startswith("/"):
            strings.add(leaf.lower())
    for text in texts:
        numbers |= numbers_in(text)
    numbers -= {0.0}
    return numbers, strings


def names_a_tested_value(finding: Finding, numbers: set[float], strings: set[str]) -> list[str]:
    lowered = finding.sentence.lower()
    hits = [f"{value:g}" for value in sorted(numbers_in(finding.sentence) & numbers)]
    hits += [value for value in sorted(strings) if re.search(rf"(?<!\w){re.escape(value)}(?!\w)", lowered)]
    return hits


def description_findings(scenario: Scenario) -> dict[str, list[Finding]]:
    return {tool.name: policy_sentences(tool.description, scenario.rules) for tool in scenario.tools}


def task_leaks(scenario: Scenario, task: Task, findings: dict[str, list[Finding]]) -> list[str]:
    """`tool: value` for each flagged sentence in a visible description that names a value the task's trap tests."""
    numbers, strings = tested_values(task)
    leaks = []
    for tool, tool_findings in findings.items():
        for finding in tool_findings:
            hits = names_a_tested_value(finding, numbers, strings)
            if hits:
                leaks.append(f'{tool}: {", ".join(hits)} in "{finding.sentence}"')
    return leaks


def instruction_findings(scenario: Scenario, task: Task) -> list[Finding]:
    """The instruction's policy sentences that also name a value its critical or guard items test."""
    numbers, strings = tested_values(task)
    return [
        Finding(finding.sentence, finding.reasons + tuple(f"tested value {hit}" for hit in hits))
        for finding in policy_sentences(task.instruction, scenario.rules)
        if (hits := names_a_tested_value(finding, numbers, strings))
    ]


def agreement(rules_of: dict[str, str]) -> tuple[list[str], int, int, int, int]:
    """Compare the detector with the hand labels: (lines, true pos, false pos, false neg, true neg)."""
    cases = yaml.safe_load(LABELS.read_text())
    lines: list[str] = []
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    for case in cases:
        flagged = bool(policy_sentences(case["description"], rules_of.get(case["scenario"], "")))
        key = ("t" if flagged == case["states_policy"] else "f") + ("p" if flagged else "n")
        counts[key] += 1
        if key in ("fp", "fn"):
            kind = "false positive" if key == "fp" else "missed"
            lines.append(f"  {kind}: {case['scenario']}/{case['tool']}: {case['description'][:110]}")
    return lines, counts["tp"], counts["fp"], counts["fn"], counts["tn"]


def _print_findings(title: str, findings: Iterable[Finding]) -> None:
    print(title)
    for finding in findings:
        print(f"    - [{'; '.join(finding.reasons)}] {finding.sentence}")


def main(argv: list[str]) -> int:
    verbose = "--verbose" in argv
    sources = [arg for arg in argv if arg != "--verbose"]
    catalog = validate_sources(sources, bundled=not sources).catalog
    scenarios = list(catalog.scenarios.values())
    tools = sum(len(scenario.tools) for scenario in scenarios)
    flagged_tools = 0
    leaking_tasks = 0
    flagged_instructions = 0
    tasks = 0
    for scenario in scenarios:
        findings = description_findings(scenario)
        flagged_tools += sum(1 for found in findings.values() if found)
        for tool, found in findings.items():
            if found and verbose:
                _print_findings(f"{scenario.id}/{tool}:", found)
        for task in scenario.tasks:
            tasks += 1
            leaks = task_leaks(scenario, task, findings)
            leaking_tasks += bool(leaks)
            in_instruction = instruction_findings(scenario, task)
            flagged_instructions += bool(in_instruction)
            if verbose and leaks:
                print(f"{task.id}: trap stated in a description")
                for leak in leaks:
                    print(f"    - {leak}")
            if verbose and in_instruction:
                _print_findings(f"{task.id}: instruction", in_instruction)
    print(f"tool descriptions stating policy:              {flagged_tools} of {tools}")
    print(f"tasks whose trap is stated in a description:   {leaking_tasks} of {tasks}")
    print(f"instructions stating a value their trap tests: {flagged_instructions} of {tasks}")
    lines, tp, fp, fn, tn = agreement({scenario.id: scenario.rules for scenario in scenarios})
    print(
        f"against {tp + fp + fn + tn} hand-labelled descriptions: {tp} flagged and labelled policy, "
        f"{tn} passed and labelled clean, {fp} false positives, {fn} missed"
    )
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
