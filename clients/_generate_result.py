"""What `occusim generate` is asked to do (`GenerationSettings`) and what it got (`GenerationResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import ValidationError

from occusim.environments import Scenario
from occusim.server import WorldModel

from ._generate_author import AuthorSettings, StageCall, StageFailedError
from ._generate_draft import Draft
from ._generate_verify import Verification


@dataclass(frozen=True)
class GenerationSettings:
    """What to generate and how hard to try: `rounds` of repair after the first verification, and the share of
    reference steps the world model must simulate faithfully (`min_faithful`)."""

    occupation: str
    category: str
    author: AuthorSettings
    world: WorldModel
    rounds: int = 2
    min_faithful: float = 1.0
    concurrency: int = 4
    seed: int = 0


@dataclass
class GenerationResult:
    """The draft as far as it got, every call of the author model, every round of verification."""

    settings: GenerationSettings
    draft: Draft
    trail: list[StageCall] = field(default_factory=list)
    verifications: list[Verification] = field(default_factory=list)
    failure: StageFailedError | None = None
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def scenario(self) -> Scenario | None:
        try:
            return self.draft.scenario() if self.draft.references is not None else None
        except ValidationError:
            return None

    @property
    def verified(self) -> bool:
        return self.failure is None and bool(self.verifications) and self.verifications[-1].ok
