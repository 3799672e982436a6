"""`generate_scenario`: the five stages of `occusim generate`, then rounds of verification whose problems go back
to the stages that own them."""

from __future__ import annotations

from ._generate_author import StageFailedError, ask_stage
from ._generate_draft import Draft
from ._generate_result import GenerationResult, GenerationSettings
from ._generate_stages import STAGE_LIST
from ._generate_verify import verify


async def generate_scenario(settings: GenerationSettings) -> GenerationResult:
    """Run the five stages, then verify and repair for at most `settings.rounds` rounds."""
    result = GenerationResult(settings, Draft(settings.occupation, settings.category))
    try:
        for stage in STAGE_LIST:
            result.draft = await ask_stage(stage, result.draft, settings.author, result.trail)
        for round_number in range(1, settings.rounds + 2):
            verification = await verify(
                result.draft,
                settings.world,
                task_count=settings.author.task_count,
                min_faithful=settings.min_faithful,
                concurrency=settings.concurrency,
                seed=settings.seed,
            )
            result.verifications.append(verification)
            if verification.ok or verification.simcheck_error or round_number > settings.rounds:
                break
            for stage in STAGE_LIST:
                problems = verification.problems.get(stage.name)
                if problems:
                    result.draft = await ask_stage(
                        stage,
                        result.draft,
                        settings.author,
                        result.trail,
                        round_number=round_number,
                        repair=problems,
                    )
    except StageFailedError as error:
        result.failure = error
    return result
