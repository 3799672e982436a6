"""One gateway to every model: litellm, the local GGUF backend, the response cache, usage accounting."""

from ._cache import ResponseCache, default_cache, set_default_cache
from ._completion import Completion, ToolCall
from ._config import ModelConfig
from ._errors import (
    CONFIGURATION_ERROR,
    LLMError,
    LLMOutputError,
    ProviderAnswerError,
    ProviderConfigError,
    ProviderError,
)
from ._gateway import complete, warm_up
from ._json_output import parse_json_output
from ._local import LocalEndpoint, start_local_model
from ._provider_setup import setting_to_check
from ._retry import RetryPolicy
from ._scripted import ScriptedReply, scripted_model
from ._seeds import derived_seed
from ._usage import UsageLedger, add_usage, sum_usage

__all__ = [
    "CONFIGURATION_ERROR",
    "Completion",
    "LLMError",
    "LLMOutputError",
    "LocalEndpoint",
    "ModelConfig",
    "ProviderAnswerError",
    "ProviderConfigError",
    "ProviderError",
    "ResponseCache",
    "RetryPolicy",
    "ScriptedReply",
    "ToolCall",
    "UsageLedger",
    "add_usage",
    "complete",
    "default_cache",
    "derived_seed",
    "parse_json_output",
    "scripted_model",
    "set_default_cache",
    "setting_to_check",
    "start_local_model",
    "sum_usage",
    "warm_up",
]
