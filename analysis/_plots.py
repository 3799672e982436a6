"""The report's figures as PNG bytes: completion by category and fault mode, and degradation across modes."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from ._metrics import Rate, RunMetrics, fault_sorted

_BLUE = "#2f6db3"
_GREY = "#9aa5b1"
# One colour per fault mode, E0 first.
_COLOURS = ("#2f6db3", "#e08a2c", "#c0392b", "#7d3c98", "#2e8b57")


@dataclass
class Figure:
    """One rendered plot: a file-name stem, a title and the PNG bytes."""

    name: str
    title: str
    png: bytes
    note: str = ""  # what the reader should know to read it (say, that it has nothing to draw)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only: never open a window
    import matplotlib.pyplot as plt

    return plt


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    _pyplot().close(figure)
    return buffer.getvalue()


def _errors(rates: list[Rate]) -> list[list[float]]:
    """Distances from each rate down and up to its interval's ends, as matplotlib's error bars take them."""
    below = [(rate.rate - rate.ci.low) if rate.ci and rate.rate is not None else 0.0 for rate in rates]
    above = [(rate.ci.high - rate.rate) if rate.ci and rate.rate is not None else 0.0 for rate in rates]
    return [[max(value, 0.0) for value in below], [max(value, 0.0) for value in above]]


def completion_by_category(metrics: RunMetrics) -> Figure | None:
    """Horizontal bars: completion of each category in each fault mode, with 95 % intervals."""
    table = {name: cells for name, cells in metrics.by_category_and_mode.items() if cells}
    if not table:
        return None
    modes = fault_sorted({mode for cells in table.values() for mode in cells})
    names = list(table)[::-1]
    plt = _pyplot()
    height = 0.8 / len(modes)
    figure, axes = plt.subplots(figsize=(7.5, (0.25 + 0.22 * len(modes)) * len(names) + 1.6))
    for index, mode in enumerate(modes):
        rates = [table[name].get(mode, Rate()) for name in names]
        positions = [row + (index - (len(modes) - 1) / 2) * height for row in range(len(names))]
        axes.barh(positions, [rate.rate or 0.0 for rate in rates], height=height, xerr=_errors(rates),
                  color=_COLOURS[index % len(_COLOURS)], label=mode, error_kw={"elinewidth": 0.8, "capsize": 2})
    axes.set_yticks(range(len(names)), names)
    axes.set_xlim(0, 1)
    axes.set_axisbelow(True)
    axes.set_xlabel("completion rate (bars: 95 % interval over tasks)")
    axes.set_title("Completion by category and fault mode")
    axes.grid(axis="x", alpha=0.3)
    axes.legend(loc="lower right", fontsize=8)
    note = ""
    if all(not rate.rate for cells in table.values() for rate in cells.values()):
        note = "Every completion rate is 0: no episode passed, so there is no bar to draw."
        axes.text(0.5, 0.5, "every completion rate is 0\n(no bar to draw)", transform=axes.transAxes,
                  ha="center", va="center", color="#5b6770")
    return Figure("completion_by_category", "Completion by category and fault mode", _png(figure), note)


def degradation(metrics: RunMetrics) -> Figure | None:
    """Completion rate across the fault modes E0-E3 with 95 % intervals, and each category as a thin line."""
    modes = list(metrics.by_fault_mode)
    if not modes:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(7.5, 4.2))
    positions = list(range(len(modes)))
    categories = metrics.by_category_and_mode
    if len(categories) > 1:
        for cells in categories.values():
            line = [cells[mode].rate if mode in cells else None for mode in modes]
            axes.plot(positions, [r if r is not None else float("nan") for r in line], color=_GREY,
                      linewidth=1, alpha=0.7)
    rates = [metrics.by_fault_mode[mode] for mode in modes]
    overall = [rate.rate or 0.0 for rate in rates]
    axes.errorbar(positions, overall, yerr=_errors(rates), color=_BLUE, linewidth=2.5, elinewidth=1.2, marker="o",
                  capsize=4, label="all tasks")
    for x, y, rate in zip(positions, overall, rates, strict=True):
        axes.annotate(f"{y:.0%} ({rate.passed}/{rate.total})", (x, y), textcoords="offset points", xytext=(8, 8),
                      ha="left", fontsize=9)
    axes.set_xticks(positions, modes)
    axes.set_xlim(-0.4, len(modes) - 0.6)
    axes.set_ylim(0, 1.1)
    axes.set_ylabel("completion rate (bars: 95 % interval)")
    axes.set_title("Degradation across fault modes" + (" (grey: one line per category)" if len(categories) > 1
                                                       else ""))
    axes.grid(axis="y", alpha=0.3)
    return Figure("degradation", "Degradation across fault modes", _png(figure))


def figures(metrics: RunMetrics) -> list[Figure]:
    return [figure for figure in (completion_by_category(metrics), degradation(metrics)) if figure]
