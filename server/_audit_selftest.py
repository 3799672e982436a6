"""The audit's self-test: every bundled reference step, broken by seeded mutations whose targets come from the
scenario's collections, the state and the patch (never from the audit's own lookups), and changed by probes
that keep it faithful; recall per mutation kind and false alarms per probe kind."""

from __future__ import annotations

import random
from collections import defaultdict

from pydantic import BaseModel, Field, computed_field

from occusim.environments import (
    Catalog,
    load_catalog,
)

from ._audit_golden import golden_steps
from ._audit_mutations import MUTATORS, PROBES


class MutationTally(BaseModel):
    steps: int = 0
    caught: int = Field(default=0, description="Mutated steps flagged; for a probe, probed steps flagged.")


class AuditSelftest(BaseModel):
    """How well the per-step audit tells broken simulated steps from faithful ones. A self-test: its cases
    are built from the bundled catalog, by the same project that wrote the audit."""

    seed: int
    steps: int = Field(description="Labelled steps: the golden ones, their mutations and their probes.")
    golden: int
    false_alarms: int = Field(description="Golden steps the audit flagged.")
    mutated: int
    caught: int = Field(description="Mutated steps the audit flagged.")
    probed: int = Field(default=0, description="Probed steps: golden steps the audit spares, changed faithfully.")
    probe_alarms: int = Field(default=0, description="Probed steps the audit flagged.")
    by_mutation: dict[str, MutationTally]
    by_probe: dict[str, MutationTally] = Field(default_factory=dict)
    missed: list[str] = Field(default_factory=list, description="A few mutated steps the audit let through.")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def recall(self) -> float:
        """Share of the mutated steps the audit flagged."""
        return self.caught / self.mutated if self.mutated else 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def false_alarm_rate(self) -> float:
        """Share of the golden and probed steps the audit flagged."""
        checked = self.golden + self.probed
        return (self.false_alarms + self.probe_alarms) / checked if checked else 0.0

    def summary(self) -> str:
        """Recall and false alarms with their counts, then one line per mutation and probe kind."""
        lines = [f"recall: {100 * self.recall:.1f} % ({self.caught} of {self.mutated} mutated steps)",
                 f"false alarms: {100 * self.false_alarm_rate:.1f} % ({self.false_alarms} of {self.golden} golden "
                 f"steps, {self.probe_alarms} of {self.probed} probed steps)"]
        for name, tally in self.by_mutation.items():
            lines.append(f"  mutation {name:<24} {tally.caught:>4} of {tally.steps:>4} caught"
                         f"  {_share(tally):>6}")
        for name, tally in self.by_probe.items():
            lines.append(f"  probe    {name:<24} {tally.caught:>4} of {tally.steps:>4} flagged"
                         f" {_share(tally):>6}")
        return "\n".join(lines)


def _share(tally: MutationTally) -> str:
    return f"{100 * tally.caught / tally.steps:.1f} %" if tally.steps else "-"


def run_audit_selftest(seed: int = 0, catalog: Catalog | None = None) -> AuditSelftest:
    """Audit every golden step of the catalog, one seeded mutation of it per kind that applies, and one
    probe per kind on the golden steps the audit spares."""
    catalog = catalog or load_catalog([])
    rng = random.Random(seed)
    mutations: dict[str, MutationTally] = defaultdict(MutationTally)
    probes: dict[str, MutationTally] = defaultdict(MutationTally)
    golden = false_alarms = 0
    missed: list[str] = []
    for step in golden_steps(catalog):
        golden += 1
        spared = step.audit() == 0
        false_alarms += not spared
        for name, mutate in MUTATORS.items():
            broken = mutate(step, rng)
            if broken is None:
                continue
            mutations[name].steps += 1
            if step.audit(broken) > 0:
                mutations[name].caught += 1
            elif len(missed) < 20:
                missed.append(f"{name}: {step.task_id} {step.tool.name}")
        if not spared:
            continue
        for name, probe in PROBES.items():
            changed = probe(step, rng)
            if changed is not None:
                probes[name].steps += 1
                probes[name].caught += step.audit(changed) > 0
    by_mutation = {name: mutations[name] for name in MUTATORS if name in mutations}
    by_probe = {name: probes[name] for name in PROBES if name in probes}
    return AuditSelftest(
        seed=seed, steps=golden + sum(t.steps for t in by_mutation.values()) + sum(t.steps for t in by_probe.values()),
        golden=golden, false_alarms=false_alarms, mutated=sum(t.steps for t in by_mutation.values()),
        caught=sum(t.caught for t in by_mutation.values()), probed=sum(t.steps for t in by_probe.values()),
        probe_alarms=sum(t.caught for t in by_probe.values()), by_mutation=by_mutation, by_probe=by_probe,
        missed=missed)
