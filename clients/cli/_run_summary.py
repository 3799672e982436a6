"""What `occusim run` prints when it ends, and its exit status: a run that could not be run is not a success."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from occusim.clients import BatchSummary

# The exit status of a run stopped by a configuration error, or whose every new episode failed for reasons
# outside the agent: nothing was measured.
NOT_MEASURED = 3


def print_summary(summary: BatchSummary) -> int:
    """Print the run's outcome on stdout (and why it failed on stderr); the command's exit status."""
    from occusim.analysis import compute_metrics

    config = summary.config
    metrics = compute_metrics(summary.rows, intervals=False)  # the summary prints no interval
    completion = metrics.completion
    rate = "n/a" if completion.rate is None else f"{completion.rate:.1%}"
    print(f"occusim run: {summary.ran} episode(s) run, {summary.skipped} already done; completion {rate} "
          f"({completion.passed}/{completion.total}), {metrics.infra_errors} infrastructure error(s)")
    for mode, mode_rate in metrics.by_fault_mode.items():
        print(f"  {mode}: {mode_rate.passed}/{mode_rate.total}")
    robustness = metrics.robustness
    print(f"  robustness: {robustness.note}" if robustness.value is None
          else f"  robustness: {robustness.value:.3f} ({robustness.note})")
    if summary.spent_usd is not None:
        print(f"  spent: ${summary.spent_usd:.4f} of --max-cost ${config.max_cost:g}")
    if summary.stopped_by is not None:
        row = summary.stopped_by
        print(f"occusim run: stopped at a configuration error in {row.task_id} ({row.fault_mode}, trial "
              f"{row.trial}): {row.configuration_error}. {summary.unscheduled} combination(s) not started; fix "
              "the setting and run again with the same --out to go on", file=sys.stderr)
        return NOT_MEASURED
    if summary.unscheduled:
        print(f"  stopped at --max-cost: {summary.unscheduled} combination(s) not started; run again with the same "
              "--out (and a new --max-cost) to go on")
    print(f"  results: {summary.run_dir / 'results.jsonl'}; report: occusim report {summary.run_dir}")
    new = summary.new_rows
    if new and all(row.status == "infra_error" for row in new):
        print(f"occusim run: every episode of this run ({len(new)}) was an infrastructure error, so nothing was "
              f"measured; the first: {new[0].error}", file=sys.stderr)
        return NOT_MEASURED
    return 0
