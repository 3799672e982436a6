# The public names of occusim.judge. `__init__.py` loads them lazily from this list, so that importing one name
# loads only the modules it needs, while type checkers see the real types.
from ._agreement import Agreement, agreement, cohens_kappa
from ._calibration import disagreement_exemplars, episode_excerpt, without_exemplars
from ._errors import JudgeError, JudgeModelError
from ._json_values import json_equal
from ._judge import MAX_VOTES, VERIFICATION_PLAN_ID, judge
from ._labels import LabelComparison, LabeledEpisode, agreement_by_group, compare_labels, read_labels
from ._prompt import PROMPT_VERSION, JudgedCheck
from ._scoring import check_item, score_items
from ._service import JUDGE_PATH, JudgeRequest, judge_app, judge_router
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
    "PROMPT_VERSION",
    "Agreement",
    "CheckVerdict",
    "ItemVerdict",
    "JudgeError",
    "JudgeModelError",
    "JudgeRequest",
    "JudgeSettings",
    "LabelComparison",
    "LabeledEpisode",
    "NoUsableVote",
    "Verdict",
    "Vote",
    "agreement",
    "agreement_by_group",
    "check_item",
    "check_state",
    "check_tool_call",
    "cohens_kappa",
    "compare_labels",
    "disagreement_exemplars",
    "episode_excerpt",
    "counts_as_call",
    "judge",
    "judge_app",
    "judge_router",
    "json_equal",
    "read_labels",
    "score_items",
    "without_exemplars",
    "vote_seed",
]
