"""Reference agent, batch runner, metrics, reports, export and the `occusim` command line.

Names load on first use, so that the command line (which lives in this package) starts fast.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "._agent": ("Agent", "LLMAgent"),
    "._batch": ("BatchSummary", "InfraError", "run_batch"),
    "._conversation": ("AgentRun", "McpConversation", "ToolEvent", "system_prompt"),
    "._export": ("ExportMetadata", "ItemReward", "OpenAIExample", "ShareGPTExample", "export_examples", "export_run"),
    "._mcp_connect": ("connect", "stdio_command"),
    "._metrics": ("Rate", "Robustness", "RunMetrics", "compute_metrics", "pass_at_k", "pass_hat_k", "robustness"),
    "._replay_agent": ("REPLAY_AGENT", "ReplayAgent"),
    "._report": ("build_report", "render_html", "render_markdown", "write_report"),
    "._results": ("ResultRow", "RunConfig", "RunDir", "RunError", "load_rows"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

