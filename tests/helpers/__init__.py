"""Deterministic parts for testing and benchmarking occusim: scenarios, scripted models, live servers.

They are not part of the installed package. Server processes register the scripted world models by importing
`tests.helpers.triage_worlds` or `tests.helpers.replay_worlds` (named in OCCUSIM_SCRIPTED_MODELS, with the
checkout on PYTHONPATH: `server_env` sets both).
"""

from ._browser import Browser, BrowserError
from ._chat_replies import chat_reply, chat_stream, schema_arguments
from ._golden_steps import golden_world, play
from ._judge_cli import judge_by_cli
from ._judges import (
    ScriptedJudge,
    ballot,
    calibrated_ballot,
    calibrated_judge,
    cut_short,
    fails_answer,
    garbage,
    garbage_then,
    passes,
    passing_judge,
    presented_ids,
)
from ._nginx import NginxProxy, nginx_config, nginx_executable
from ._occubench import occubench_sample_path
from ._openenv_served import openenv_served
from ._postgres import POSTGRES_URL, drop_schema
from ._prompts import tracked_call
from ._provider import HANG, STUB_KEY, ProviderStub, Reply, completion_body, provider_stub
from ._raw_mcp import SESSION_HEADER, RawSession, rpc
from ._redis import REDIS_URL
from ._replay import TASK_A, TASK_B, ReplayWorld, ScriptedAgent, task_of, tool_results
from ._runs import TOOLS, synthetic_rows, transcript, write_run
from ._scripted_provider import ScriptedProvider, passing_verdicts, replay_responders
from ._served import (
    API_KEYS,
    LEGACY,
    MODERN,
    MODERN_VERSION,
    PYTHON,
    TOKEN_SECRET,
    TRIAGE_CALLS,
    LiveServer,
    free_port,
    hosted_settings,
    mcp_session,
    open_episode,
    play_triage_episode,
    serve_args,
    server_env,
    service_processes,
    start_service,
    wait_healthy,
    write_triage_source,
)
from ._triage import (
    CHEST_PAIN,
    PATIENT,
    TRIAGE,
    TriageModel,
    simulate_triage,
    start_episode,
    triage_catalog,
    triage_scenario,
)
from ._viewed_run import (
    AGENT_THOUGHT,
    CLEAN,
    FAULTED,
    HOSTILE,
    HOSTILE_ID,
    SYSTEM_PROMPT,
    TASK_TEXT,
    ViewedRun,
    write_viewed_run,
)

__all__ = [
    "judge_by_cli",
    "service_processes",
    "replay_responders",
    "TRIAGE_CALLS",
    "open_episode",
    "play_triage_episode",
    "chat_reply",
    "chat_stream",
    "schema_arguments",
    "golden_world",
    "play",
    "CLEAN",
    "FAULTED",
    "HOSTILE",
    "HOSTILE_ID",
    "AGENT_THOUGHT",
    "SYSTEM_PROMPT",
    "TASK_TEXT",
    "Browser",
    "BrowserError",
    "ViewedRun",
    "write_viewed_run",
    "HANG",
    "STUB_KEY",
    "ProviderStub",
    "ScriptedProvider",
    "passing_verdicts",
    "Reply",
    "completion_body",
    "provider_stub",
    "API_KEYS",
    "CHEST_PAIN",
    "LEGACY",
    "MODERN",
    "MODERN_VERSION",
    "PATIENT",
    "POSTGRES_URL",
    "PYTHON",
    "TASK_A",
    "TASK_B",
    "TOKEN_SECRET",
    "TOOLS",
    "TRIAGE",
    "LiveServer",
    "NginxProxy",
    "REDIS_URL",
    "RawSession",
    "SESSION_HEADER",
    "rpc",
    "nginx_config",
    "nginx_executable",
    "ReplayWorld",
    "ScriptedAgent",
    "ScriptedJudge",
    "TriageModel",
    "ballot",
    "calibrated_ballot",
    "calibrated_judge",
    "cut_short",
    "drop_schema",
    "fails_answer",
    "free_port",
    "openenv_served",
    "garbage",
    "garbage_then",
    "hosted_settings",
    "mcp_session",
    "occubench_sample_path",
    "passes",
    "passing_judge",
    "presented_ids",
    "serve_args",
    "server_env",
    "start_service",
    "wait_healthy",
    "simulate_triage",
    "start_episode",
    "synthetic_rows",
    "task_of",
    "tool_results",
    "tracked_call",
    "transcript",
    "triage_catalog",
    "triage_scenario",
    "write_run",
    "write_triage_source",
]
