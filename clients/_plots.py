"""The report's figures as PNG bytes: completion by category, and degradation across fault modes."""

from __future__ import annotations

import io
from dataclasses import dataclass

from ._metrics import FAULT_ORDER, RunMetrics, rates_by
from ._results import ResultRow

_BLUE = "#2f6db3"
_GREY = "#9aa5b1"


@dataclass
class Figure:
    """One rendered plot: a file-name stem, a title and the PNG bytes."""

    name: str
    title: str
    png: bytes


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only: never open a window
    import matplotlib.pyplot as plt

    return plt


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    _pyplot().close(figure)
    return buffer.getvalue()


def completion_by_category(metrics: RunMetrics) -> Figure | None:
    """Horizontal bars: completion rate of each category, labelled with passed/total."""
    rows = [(name, rate) for name, rate in metrics.by_category.items() if rate.total]
    if not rows:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(7.5, 0.55 * len(rows) + 1.4))
    names = [name for name, _ in rows][::-1]
    values = [rate.rate or 0.0 for _, rate in rows][::-1]
    bars = axes.barh(names, values, color=_BLUE)
    for bar, (_, rate) in zip(bars, rows[::-1], strict=True):
        axes.text(min(bar.get_width() + 0.01, 0.9), bar.get_y() + bar.get_height() / 2,
                  f"{rate.passed}/{rate.total}", va="center", fontsize=9)
    axes.set_xlim(0, 1)
    axes.set_axisbelow(True)
    axes.set_xlabel("completion rate")
    axes.set_title("Completion by category")
    axes.grid(axis="x", alpha=0.3)
    return Figure("completion_by_category", "Completion by category", _png(figure))


def degradation(metrics: RunMetrics, rows: list[ResultRow]) -> Figure | None:
    """Completion rate across the fault modes E0-E3: all tasks, and each category as a thin line."""
    modes = [mode for mode in FAULT_ORDER if mode in metrics.by_fault_mode]
    if not modes:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(7.5, 4.2))
    positions = list(range(len(modes)))
    categories = sorted({row.category for row in rows if row.scored})
    if len(categories) > 1:
        cells = rates_by([row for row in rows if row.scored], lambda row: (row.category, row.fault_mode))
        for category in categories:
            rates = [cells[category, mode].rate if (category, mode) in cells else None for mode in modes]
            axes.plot(positions, [r if r is not None else float("nan") for r in rates], color=_GREY,
                      linewidth=1, alpha=0.7)
    overall = [metrics.by_fault_mode[mode].rate or 0.0 for mode in modes]
    axes.plot(positions, overall, color=_BLUE, linewidth=2.5, marker="o", label="all tasks")
    for x, y, mode in zip(positions, overall, modes, strict=True):
        rate = metrics.by_fault_mode[mode]
        axes.annotate(f"{y:.0%} ({rate.passed}/{rate.total})", (x, y), textcoords="offset points", xytext=(0, 8),
                      ha="center", fontsize=9)
    axes.set_xticks(positions, modes)
    axes.set_xlim(-0.4, len(modes) - 0.6)
    axes.set_ylim(0, 1.1)
    axes.set_ylabel("completion rate")
    axes.set_title("Degradation across fault modes" + (" (grey: one line per category)" if len(categories) > 1
                                                       else ""))
    axes.grid(axis="y", alpha=0.3)
    return Figure("degradation", "Degradation across fault modes", _png(figure))


def figures(metrics: RunMetrics, rows: list[ResultRow]) -> list[Figure]:
    return [figure for figure in (completion_by_category(metrics), degradation(metrics, rows)) if figure]
