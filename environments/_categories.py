"""OccuBench's ten occupational categories and their folder slugs."""

from __future__ import annotations

from typing import Literal

Category = Literal[
    "Business & Enterprise",
    "Technology & IT",
    "Industrial & Engineering",
    "Transportation & Logistics",
    "Commerce & Consumer",
    "Education & Culture",
    "Healthcare & Life Sciences",
    "Public Service & Governance",
    "Agriculture & Environment",
    "Science & Research",
]

CATEGORIES: tuple[str, ...] = Category.__args__  # type: ignore[attr-defined]


def category_slug(category: str) -> str:
    """`Business & Enterprise` -> `business-enterprise`."""
    words = category.lower().replace("&", " ").split()
    return "-".join(words)
