"""Scenario and task models, loaders, the OccuBench importer and the bundled catalog."""

from ._catalog import Catalog
from ._categories import CATEGORIES, Category, category_slug
from ._errors import INCONSISTENT, ScenarioError, ScenarioErrors, UnknownTaskError, format_location
from ._exemplar_files import TaskExemplars, add_exemplars, read_exemplar_dir, write_exemplars
from ._json_input import MAX_JSON_DEPTH, TEXT_PATTERN, JsonInputError, check_json, json_problems
from ._loader import BUNDLED_CATALOG, bundled_may_match, load_catalog, load_scenario_file, load_source
from ._mcp_names import RAW_ARGUMENTS_META, SUBMIT_TOOL, TASK_PROMPT, TASK_RESOURCE
from ._occubench import OCCUBENCH_PREFIX, load_occubench
from ._occusim_error import OccusimError
from ._parse import parse_scenario
from ._rubric import (
    CompareCheck,
    Exemplar,
    LlmItem,
    PresenceCheck,
    Rubric,
    RubricItem,
    StateCheck,
    StateCheckKind,
    StateItem,
    ToolCallCheck,
    ToolCallItem,
)
from ._scenario import Scenario, Tool
from ._schema import SCENARIO_SCHEMA_PATH, scenario_json_schema
from ._schema_safety import local_validator, schema_problems
from ._state import (
    PatchError,
    UnresolvedPointer,
    apply_json_patch,
    canonical_json,
    describe_type,
    merge_patch,
    resolve_pointer,
    state_hash,
)
from ._step_flag import FlagKind, StepFlag
from ._task import ReferenceStep, Task
from ._tool_error import SchemaViolation, ToolError, ToolErrorType, read_tool_error, reports_error
from ._trajectory import (
    EpisodeRecord,
    EpisodeStatus,
    FaultMode,
    FaultSettings,
    InjectedFault,
    ProtocolName,
    SimulationMode,
    StepRecord,
    Usage,
)
from ._validation import ValidationReport, validate_catalog, validate_scenario, validate_sources
from ._yaml import dump_scenario, write_scenario
from ._yaml_load import YamlLoadError, load_yaml, not_utf8

__all__ = [
    "BUNDLED_CATALOG",
    "CATEGORIES",
    "Catalog",
    "Category",
    "EpisodeRecord",
    "EpisodeStatus",
    "Exemplar",
    "TaskExemplars",
    "add_exemplars",
    "read_exemplar_dir",
    "write_exemplars",
    "FaultMode",
    "FaultSettings",
    "FlagKind",
    "InjectedFault",
    "JsonInputError",
    "INCONSISTENT",
    "MAX_JSON_DEPTH",
    "TEXT_PATTERN",
    "PatchError",
    "LlmItem",
    "ReferenceStep",
    "RAW_ARGUMENTS_META",
    "ProtocolName",
    "SCENARIO_SCHEMA_PATH",
    "SUBMIT_TOOL",
    "Rubric",
    "RubricItem",
    "Scenario",
    "SimulationMode",
    "StepRecord",
    "StepFlag",
    "ScenarioError",
    "ScenarioErrors",
    "SchemaViolation",
    "StateCheck",
    "StateCheckKind",
    "CompareCheck",
    "PresenceCheck",
    "StateItem",
    "TASK_PROMPT",
    "TASK_RESOURCE",
    "Task",
    "Tool",
    "ToolCallCheck",
    "ToolCallItem",
    "ToolError",
    "ToolErrorType",
    "UnknownTaskError",
    "UnresolvedPointer",
    "Usage",
    "ValidationReport",
    "apply_json_patch",
    "canonical_json",
    "category_slug",
    "check_json",
    "describe_type",
    "format_location",
    "json_problems",
    "dump_scenario",
    "bundled_may_match",
    "load_catalog",
    "local_validator",
    "load_occubench",
    "OCCUBENCH_PREFIX",
    "OccusimError",
    "load_scenario_file",
    "load_source",
    "merge_patch",
    "parse_scenario",
    "read_tool_error",
    "reports_error",
    "resolve_pointer",
    "scenario_json_schema",
    "schema_problems",
    "state_hash",
    "validate_catalog",
    "validate_scenario",
    "validate_sources",
    "write_scenario",
    "YamlLoadError",
    "load_yaml",
    "not_utf8",
]
