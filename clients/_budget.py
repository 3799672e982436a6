"""`--max-cost`: the model cost a batch invocation may spend before it stops handing out new episodes."""

from __future__ import annotations

from occusim.analysis import ResultRow


def row_cost(row: ResultRow) -> float:
    """What one row's episode cost, over every role; a cost litellm does not know counts as 0."""
    return sum(usage.cost_usd or 0.0 for usage in row.usage.values())


class CostBudget:
    """Adds up the cost of the rows this invocation finishes; spent out once it reaches `cap` (USD).

    Episodes already running when the cap is reached finish and are recorded (their cost is paid), so the
    spent total may pass the cap by what those episodes cost.
    """

    def __init__(self, cap: float) -> None:
        self.cap = cap
        self.spent = 0.0
        self.unpriced = 0

    def add(self, row: ResultRow) -> None:
        self.spent += row_cost(row)
        self.unpriced += sum(1 for usage in row.usage.values() if usage.calls and usage.cost_usd is None)

    @property
    def spent_out(self) -> bool:
        return self.spent >= self.cap
