"""Scenario and task models, loaders, the OccuBench importer and the bundled catalog."""

from ._catalog import Catalog
from ._categories import CATEGORIES, Category, category_slug
from ._errors import ScenarioError, ScenarioErrors, UnknownTaskError
from ._loader import BUNDLED_CATALOG, load_catalog, load_scenario_file, load_source, parse_scenario
from ._rubric import Exemplar, LlmItem, Rubric, RubricItem, StateCheck, StateItem, ToolCallCheck, ToolCallItem
from ._scenario import Scenario, Tool
from ._state import apply_json_patch, canonical_json, merge_patch, state_hash
from ._task import ReferenceStep, Task
from ._trajectory import (
    EpisodeRecord,
    EpisodeStatus,
    FaultMode,
    FaultSettings,
    InjectedFault,
    SimulationMode,
    StepRecord,
    Usage,
)

__all__ = [
    "BUNDLED_CATALOG",
    "CATEGORIES",
    "Catalog",
    "Category",
    "EpisodeRecord",
    "EpisodeStatus",
    "Exemplar",
    "FaultMode",
    "FaultSettings",
    "InjectedFault",
    "LlmItem",
    "ReferenceStep",
    "Rubric",
    "RubricItem",
    "Scenario",
    "SimulationMode",
    "StepRecord",
    "ScenarioError",
    "ScenarioErrors",
    "StateCheck",
    "StateItem",
    "Task",
    "Tool",
    "ToolCallCheck",
    "ToolCallItem",
    "UnknownTaskError",
    "Usage",
    "apply_json_patch",
    "canonical_json",
    "category_slug",
    "load_catalog",
    "load_scenario_file",
    "load_source",
    "merge_patch",
    "parse_scenario",
    "state_hash",
]
