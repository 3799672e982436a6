# The public names of occusim.judge. `__init__.py` loads them lazily from this list, so that importing one name
# loads only the modules it needs, while type checkers see the real types.
from ._agreement import Agreement, agreement, cohens_kappa
from ._baselines import Baseline, derive_baselines
from ._calibration import disagreement_exemplars, episode_excerpt, without_exemplars
from ._discrimination import discriminate_catalog, discriminate_task, score_baseline
from ._discrimination_report import (
    BaselineScore,
    DiscriminationReport,
    GateFailure,
    TaskDiscrimination,
    render_markdown,
)
from ._errors import JudgeError, JudgeModelError
from ._json_values import json_equal
from ._judge import MAX_VOTES, VERIFICATION_PLAN_ID, judge
from ._labels import LabelComparison, LabeledEpisode, agreement_by_group, compare_labels, read_labels
from ._prompt import PROMPT_VERSION, JudgedCheck
from ._review_agreement import JudgedEpisode, ReviewAgreement, ReviewedItem, ReviewerPair, review_agreement
from ._review_label_schema import REVIEW_LABEL_SCHEMA_PATH, review_label_json_schema
from ._review_labels import (
    NOTE_LIMIT,
    LabelFileError,
    PlacedLabel,
    ReviewLabel,
    label_line,
    latest_labels,
    read_review_labels,
    reviewer_problem,
)
from ._rubric_audit import audit_catalog_rubrics
from ._scoring import check_item, score_items
from ._service import JUDGE_PATH, JudgeMeter, JudgeRequest, judge_app, judge_router
from ._settings import MAX_REASKS, JudgeSettings, NoUsableVote
from ._state_check import check_state
from ._tool_call_check import check_tool_call, counts_as_call
from ._verdict import CheckVerdict, ItemVerdict, Verdict, Vote
from ._voting import tally, vote_seed

__all__ = [
    "JUDGE_PATH",
    "VERIFICATION_PLAN_ID",
    "JudgedCheck",
    "tally",
    "MAX_REASKS",
    "MAX_VOTES",
    "NOTE_LIMIT",
    "PROMPT_VERSION",
    "Agreement",
    "Baseline",
    "BaselineScore",
    "CheckVerdict",
    "DiscriminationReport",
    "GateFailure",
    "ItemVerdict",
    "JudgeError",
    "JudgeMeter",
    "JudgeModelError",
    "JudgeRequest",
    "JudgeSettings",
    "LabelComparison",
    "JudgedEpisode",
    "LabelFileError",
    "LabeledEpisode",
    "PlacedLabel",
    "REVIEW_LABEL_SCHEMA_PATH",
    "ReviewAgreement",
    "ReviewLabel",
    "ReviewedItem",
    "ReviewerPair",
    "NoUsableVote",
    "TaskDiscrimination",
    "Verdict",
    "Vote",
    "agreement",
    "agreement_by_group",
    "check_item",
    "check_state",
    "check_tool_call",
    "cohens_kappa",
    "compare_labels",
    "derive_baselines",
    "audit_catalog_rubrics",
    "disagreement_exemplars",
    "discriminate_catalog",
    "discriminate_task",
    "episode_excerpt",
    "counts_as_call",
    "judge",
    "judge_app",
    "judge_router",
    "label_line",
    "latest_labels",
    "json_equal",
    "read_labels",
    "read_review_labels",
    "review_agreement",
    "review_label_json_schema",
    "reviewer_problem",
    "render_markdown",
    "score_baseline",
    "score_items",
    "without_exemplars",
    "vote_seed",
]
