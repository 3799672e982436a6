"""Writing a generated draft: `<id>.yaml` and `<id>.review.md` in a folder of the user's, never the catalog."""

from __future__ import annotations

from pathlib import Path

from occusim.environments import BUNDLED_CATALOG, OccusimError, write_scenario

from ._generate_result import GenerationResult
from ._generate_review import review_sheet


class GenerationOutputError(OccusimError):
    """The output folder cannot take the draft (it is inside the bundled catalog)."""


def draft_name(result: GenerationResult) -> str:
    """The file name stem: the scenario's id, or the occupation's words when no brief was accepted."""
    if result.draft.brief is not None:
        return result.draft.brief.id
    words = "".join(c if c.isalnum() else " " for c in result.settings.occupation.lower()).split()
    return "-".join(words) or "draft"


def check_output_folder(out: Path) -> None:
    """Refuse a folder inside the bundled catalog: promoting a draft there is a reviewed commit."""
    catalog = BUNDLED_CATALOG.resolve()
    target = out.resolve()
    if target == catalog or catalog in target.parents:
        raise GenerationOutputError(
            f"{out} is inside the bundled catalog ({catalog}); write drafts elsewhere and "
            "promote one with a reviewed commit"
        )


def write_generation(result: GenerationResult, out: Path) -> list[Path]:
    """Write `<id>.yaml` (when the draft is a whole scenario) and `<id>.review.md` under `out`."""
    check_output_folder(out)
    out.mkdir(parents=True, exist_ok=True)
    name = draft_name(result)
    written = []
    scenario = result.scenario
    if scenario is not None:
        written.append(write_scenario(scenario, out / f"{name}.yaml", header=_header(result, name)))
    review = out / f"{name}.review.md"
    review.write_text(review_sheet(result), encoding="utf-8")
    written.append(review)
    return written


def _header(result: GenerationResult, name: str) -> str:
    brief = result.draft.brief
    sources = sorted({rule.source for rule in brief.rules}) if brief else []
    state = (
        "passed validate, the discrimination gates and simcheck"
        if result.verified
        else "did NOT pass verification"
    )
    return "\n".join(
        [
            f"DRAFT written by `occusim generate` with {result.settings.author.model.model} "
            f"(world model {result.settings.world.name}); it {state}.",
            f"Not reviewed: check every rule and number against its source ({name}.review.md) before promoting it.",
            "Sources of its rules:",
            *(f"- {source}" for source in sources),
        ]
    )
