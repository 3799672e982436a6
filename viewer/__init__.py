"""The episode viewer's pages: an index of episodes with filters and one episode's timeline and verdict,
rendered on the server from any `EpisodeSource` (a run folder, a store, one tenant's episodes)."""

from ._app import PAGE_HEADERS, AccessDenied, SourceFor, viewer_app, viewer_routes
from ._diff import DiffRow, side_by_side
from ._filters import FILTERS, Selection
from ._labelling import LabelDesk, LabelForm, LabelRow, append_lines
from ._models import EpisodeDetail, EpisodeEntry, EpisodeSource
from ._render import render_episode, render_index
from ._timeline import StepView, step_flags, timeline

__all__ = [
    "FILTERS",
    "PAGE_HEADERS",
    "AccessDenied",
    "DiffRow",
    "EpisodeDetail",
    "EpisodeEntry",
    "EpisodeSource",
    "LabelDesk",
    "LabelForm",
    "LabelRow",
    "Selection",
    "SourceFor",
    "StepView",
    "append_lines",
    "render_episode",
    "render_index",
    "side_by_side",
    "step_flags",
    "timeline",
    "viewer_app",
    "viewer_routes",
]
