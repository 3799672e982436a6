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
from ._judge import MAX_VOTES, judge
from ._labels import LabelComparison, LabeledEpisode, agreement_by_group, compare_labels, read_labels
from ._occubench_verifier import (
    occubench_action,
    trajectory_from_messages,
    trajectory_from_record,
    verify_occubench,
)
from ._prompt import PROMPT_VERSION
from ._rubric_audit import audit_catalog_rubrics
from ._scoring import check_item, score_items
from ._service import JUDGE_PATH, JudgeRequest, judge_app, judge_router
from ._settings import MAX_REASKS, JudgeSettings, NoUsableVote
from ._state_check import check_state
from ._tool_call_check import check_tool_call, counts_as_call
from ._verdict import CheckVerdict, ItemVerdict, Verdict, Vote
from ._voting import vote_seed

__all__ = [
    "JUDGE_PATH",
    "MAX_REASKS",
    "MAX_VOTES",
    "PROMPT_VERSION",
    "Agreement",
    "Baseline",
    "BaselineScore",
    "CheckVerdict",
    "DiscriminationReport",
    "GateFailure",
    "ItemVerdict",
    "JudgeError",
    "JudgeModelError",
    "JudgeRequest",
    "JudgeSettings",
    "LabelComparison",
    "LabeledEpisode",
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
    "json_equal",
    "occubench_action",
    "read_labels",
    "render_markdown",
    "score_baseline",
    "score_items",
    "trajectory_from_messages",
    "trajectory_from_record",
    "verify_occubench",
    "without_exemplars",
    "vote_seed",
]
