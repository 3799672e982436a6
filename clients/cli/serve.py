"""`occusim serve`: one task's episode over MCP stdio, or the whole catalog as the hosted HTTP service."""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import logging
import math
import os
import sys
import threading
from typing import Any

from ._catalog_options import add_catalog_options, load_catalog_from, report_catalog_problems
from ._collector import collect_less, freeze_start_up

DESCRIPTION = """\
Serve one episode of TASK_ID as an MCP server on stdin/stdout (for MCP clients that launch servers), or,
with --http, the hosted service: every task of the catalog as MCP episodes over streamable HTTP, with
the episode API (POST /v1/episodes, GET /v1/episodes/ID, POST /v1/episodes/ID/submit), GET /v1/tasks,
GET /v1/scenarios, POST /v1/judge, GET /healthz and the OpenAPI document at /openapi.json. With
--openenv, the catalog's tasks as OpenEnv environments (its HTTP and WebSocket protocol, for RL training
loops): each WebSocket session on /ws plays episodes (reset: task_id, faults, seed; step: call_tool or
list_tools actions); calling submit_result ends the episode, judged with --judge-model, its score the
reward. TASK_ID, --faults, --seed and the other episode options are then the defaults of a reset that
names none (default: the first task of the catalog). It has no auth: it binds loopback addresses only.

Episodes are stored in --db, default $OCCUSIM_DB, else the SQLite file
~/.local/share/occusim/occusim.db ($XDG_DATA_HOME/occusim/occusim.db). Over stdio the episode id is
printed on stderr; stdout carries only MCP messages. When --judge-model is set, a submitted episode is
judged in the background right away; otherwise it is stored unjudged (judge it later with `occusim judge EPISODE_ID`).

HTTP auth: API keys from OCCUSIM_API_KEYS (comma-separated `key` or `tenant=key` entries) or api_keys in
--config (TOML or YAML; every setting of the service can be set there). Each episode's MCP URL takes
the episode's own token. --no-auth is refused unless --host is a loopback address. Episode tokens are
signed with OCCUSIM_TOKEN_SECRET (or token_secret; at least 16 characters, or the service does not
start), else with a key file kept beside the default db; processes sharing one PostgreSQL store must
share the secret.

Replicas: any number of processes sharing one PostgreSQL store and one --redis serve every episode and
every MCP session (either protocol era) behind a proxy without stickiness; see docs/deployment.md.
Limits per tenant (API key): --max-open-episodes, --max-tool-calls-per-minute and --max-cost-per-day set
every tenant's; `limits` and `tenant_limits` in --config set them per tenant. A tenant past a limit gets
429 with Retry-After; GET /v1/usage shows its usage and limits. Without --redis, usage is counted per
process, which is exact only for a single replica.

Models: --world-model / --judge-model take litellm model strings; unset, OCCUSIM_WORLD_MODEL_MODEL /
OCCUSIM_JUDGE_MODEL / OCCUSIM_MODEL apply, else the small local model (offline smoke runs only).
For tests and offline use, OCCUSIM_SCRIPTED_MODELS names Python modules (comma-separated) imported
first; they register scripted models (occusim.llm.scripted_model), used as --world-model scripted/NAME.
"""

EPILOG = """\
examples:
  occusim serve triage-nurse/pediatric-danger-zone --faults E2 --seed 7
  occusim serve triage-nurse/pediatric-danger-zone --world-model openai/gpt-4.1 --judge-model openai/gpt-4.1
  OCCUSIM_API_KEYS=alice=s3cret occusim serve --http --host 0.0.0.0 --port 8000 --allowed-host bench.example.org:*
  occusim serve --http --no-auth --port 8000
  occusim serve --openenv --port 8001 --world-model openai/gpt-4.1 --judge-model openai/gpt-4.1 --faults E2
  # one of N replicas behind a proxy: shared PostgreSQL store, shared Redis, per-tenant limits
  occusim serve --http --config service.yaml --db postgresql+asyncpg://occusim@db/occusim \\
      --redis redis://cache:6379/0 --max-open-episodes 50 --max-tool-calls-per-minute 600 --max-cost-per-day 20
"""

STDIO_ONLY = ("faults", "fault_count", "fault_duration", "fault_window", "seed", "mode", "episode_id")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task_id", metavar="TASK_ID", nargs="?", help="the task to serve over stdio")
    add_catalog_options(parser)
    parser.add_argument("--db", metavar="URL", help="store URL or SQLite path (see above for the default)")
    parser.add_argument("--world-model", metavar="M", help="model that simulates the tools")
    parser.add_argument("--judge-model", metavar="J", help="model that judges submitted episodes")
    parser.add_argument("--no-cache", action="store_true", help="do not reuse cached model responses")
    parser.add_argument("--protocol", choices=["native", "occubench"],
                        help="native (default) or occubench: OccuBench's world model, prompt faults and verifier, "
                             "read from the harness beside the --source occubench:PATH checkout")
    parser.add_argument("--tool-call-timeout", type=float, metavar="S",
                        help="seconds one tool call may spend on the world model, retries included; past it "
                             "the agent gets simulator_unavailable (default 120)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"],
                        help="log detail on stderr (default info)")
    stdio = parser.add_argument_group("stdio episode")
    stdio.add_argument("--faults", choices=["E0", "E1", "E2", "E3", "prompt"],
                       help="E0 clean (default), E1 explicit errors, E2 implicit degradation, E3 mixed, prompt")
    stdio.add_argument("--fault-count", type=int, metavar="N", help="how many faults (default 2)")
    stdio.add_argument("--fault-duration", type=int, metavar="N", help="consecutive calls per fault (default 2)")
    stdio.add_argument("--fault-window", type=int, metavar="N",
                       help="calls over which the faults are spread (default: the task's expected length)")
    stdio.add_argument("--seed", type=int, metavar="S", help="seed of the faults and the world model's requests (default 0)")
    stdio.add_argument("--mode", choices=["tracked", "history"], help="simulation mode (default tracked)")
    stdio.add_argument("--episode-id", metavar="ID", help="use this episode id instead of a random one")
    parser.add_argument("--openenv", action="store_true",
                        help="serve the catalog as OpenEnv environments over HTTP and WebSocket (see above)")
    parser.add_argument("--episode-idle-seconds", type=float, metavar="S",
                        help="with --openenv: an episode without a step for S seconds expires (default 1800), so "
                             "that rollouts abandoned without a submit do not stay open")
    parser.add_argument("--max-concurrent-calls", type=int, metavar="N",
                        help="with --openenv: tool calls that may wait on the world model at once, later ones "
                             "queue (default 128; size it to the rollouts played at once)")
    http = parser.add_argument_group("hosted service")
    http.add_argument("--http", action="store_true", help="serve the catalog over HTTP instead of stdio")
    http.add_argument("--host", help="interface to bind (default 127.0.0.1)")
    http.add_argument("--port", type=int, help="port (default 8000)")
    http.add_argument("--config", metavar="FILE", help="service settings, TOML or YAML")
    http.add_argument("--no-auth", action="store_true", help="no API keys (loopback hosts only)")
    http.add_argument("--oauth-issuer", metavar="URL",
                      help="also accept JWT access tokens of this OAuth authorization server (MCP authorization: "
                      "remote connectors sign in through it); needs --oauth-resource or public_url")
    http.add_argument("--oauth-resource", metavar="URL",
                      help="this service's resource URI, the audience tokens must name (default: public_url)")
    http.add_argument("--oauth-scope", action="append", default=[], metavar="SCOPE",
                      help="a scope every access token must carry (repeatable); a token without it gets 403")
    http.add_argument("--oauth-tenant-claim", metavar="CLAIM",
                      help="the token claim whose value is the tenant (default sub)")
    http.add_argument("--allowed-host", action="append", default=[], metavar="HOST",
                      help="also accept this Host header, e.g. bench.example.org:* (repeatable)")
    http.add_argument("--redis", metavar="URL",
                      help="Redis shared by the replicas behind one address (tenant usage, ended MCP sessions), "
                           "e.g. redis://127.0.0.1:6379/0; without it they are counted in this process only")
    http.add_argument("--max-open-episodes", type=int, metavar="N",
                      help="episodes each tenant may have open at once (default: no limit)")
    http.add_argument("--max-tool-calls-per-minute", type=int, metavar="N",
                      help="tool calls each tenant may make per minute (default: no limit)")
    http.add_argument("--max-cost-per-day", type=float, metavar="USD",
                      help="model spend (world model and judge) each tenant may reach per UTC day (default: no limit)")


async def run(args: argparse.Namespace) -> int:
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.log_level != "debug":
        # Per-request chatter of the model and HTTP client libraries would drown the service's own log.
        for noisy in ("LiteLLM", "httpx", "httpx2"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    if args.http and args.openenv:
        return _usage("give either --http (the hosted service) or --openenv (OpenEnv's protocol), not both")
    if args.openenv:
        return await _serve_openenv_checked(args)
    if args.max_concurrent_calls is not None:
        return _usage("--max-concurrent-calls applies to --openenv; --http reads max_concurrent_calls from --config")
    if args.episode_idle_seconds is not None:
        return _usage("--episode-idle-seconds applies to --openenv; --http reads episode_idle_seconds from --config")
    if args.http and args.task_id:
        return _usage("give either TASK_ID (one episode over stdio) or --http (the whole catalog), not both")
    if not args.http and not args.task_id:
        return _usage("give a TASK_ID to serve over stdio, --http for the hosted service or --openenv")
    stray = [name for name in STDIO_ONLY if getattr(args, name) is not None]
    if args.http and stray:
        flags = ", ".join("--" + name.replace("_", "-") for name in stray)
        return _usage(f"{flags} apply to a stdio episode; over HTTP each POST /v1/episodes chooses them")
    if not args.http and (args.no_auth or args.config or args.host or args.port is not None or args.allowed_host
                          or args.redis or _limit_flags(args)):
        return _usage("--host, --port, --config, --no-auth, --allowed-host, --redis and the --max-* limits need --http")
    problem = _prepare_models(args)
    if problem is not None:
        return problem
    return await (_serve_http(args) if args.http else _serve_stdio(args))


def _prepare_models(args: argparse.Namespace) -> int | None:
    """Register the scripted models and apply --no-cache; the exit status when that fails."""
    try:
        load_scripted_models(os.environ.get("OCCUSIM_SCRIPTED_MODELS", ""))
    except ImportError as error:
        print(f"occusim serve: OCCUSIM_SCRIPTED_MODELS: {error} (is its folder on PYTHONPATH?)", file=sys.stderr)
        return 2
    if args.no_cache:
        from occusim.llm import set_default_cache

        set_default_cache(None)
    return None


async def _serve_openenv_checked(args: argparse.Namespace) -> int:
    if args.episode_id is not None:
        return _usage("--episode-id names one stdio episode; over OpenEnv each reset chooses its episode id")
    if args.max_concurrent_calls is not None and args.max_concurrent_calls < 1:
        return _usage("--max-concurrent-calls must be at least 1")
    if args.episode_idle_seconds is not None and not args.episode_idle_seconds > 0:
        return _usage("--episode-idle-seconds must be above 0")
    if args.no_auth or args.config or args.allowed_host or args.redis or _limit_flags(args) or args.oauth_issuer:
        return _usage("--config, --no-auth, --allowed-host, --redis, --oauth-* and the --max-* limits need --http")
    problem = _prepare_models(args)
    if problem is not None:
        return problem
    return await _serve_openenv(args)


async def _serve_openenv(args: argparse.Namespace) -> int:
    import uvicorn

    from occusim.clients import load_protocol
    from occusim.environments import OccusimError, ScenarioErrors, UnknownTaskError
    from occusim.server import EpisodeService, Store, StoreUnavailableError
    from occusim.service import EpisodeDefaults, create_openenv_app, default_store_url, is_loopback

    host, port = args.host or "127.0.0.1", 8000 if args.port is None else args.port
    if not is_loopback(host):
        return _usage(f"--openenv has no auth, so it binds loopback addresses only, not {host}; put an "
                      "authenticating proxy in front to reach it from elsewhere")
    try:
        catalog = load_catalog_from(args)
        tasks = catalog.select()
        default_task = catalog.task(args.task_id).id if args.task_id else tasks[0].id if tasks else None
        protocol = load_protocol(args.protocol or "native", args.source)
    except ScenarioErrors as error:
        return report_catalog_problems("serve", error.errors)
    except (UnknownTaskError, OccusimError) as error:
        return _usage(error.user_message())
    if default_task is None:
        return _usage("the catalog has no task to serve; add a --source")
    mode = protocol.episode_mode(args.mode)
    options = {name: value for name, value in (("count", args.fault_count), ("duration", args.fault_duration),
                                               ("window", args.fault_window)) if value is not None}
    defaults = EpisodeDefaults(task_id=default_task, faults=args.faults or "E0", seed=args.seed or 0, mode=mode,
                               fault_options=options)
    store = Store(args.db or default_store_url())
    try:
        async with Store(store.url):
            pass  # reached and migrated before anything is served
    except (StoreUnavailableError, ValueError) as error:
        return _usage(str(error))
    service = EpisodeService(catalog, store, world_model=args.world_model, protocol=protocol,
                             judge=protocol.judge_hook(args.judge_model, catalog),
                             **({"call_deadline": args.tool_call_timeout} if args.tool_call_timeout else {}),
                             **({"max_concurrent_calls": args.max_concurrent_calls} if args.max_concurrent_calls
                                else {}))
    app = create_openenv_app(service, defaults, **({"episode_idle_seconds": args.episode_idle_seconds}
                                                  if args.episode_idle_seconds else {}))
    start_importing_litellm()
    judged = f"judged by {args.judge_model}" if args.judge_model else "unjudged (no --judge-model: no rewards)"
    print(f"occusim serve: OpenEnv on http://{host}:{port} (WebSocket /ws), {len(tasks)} tasks, first {default_task}, "
          f"episodes {judged}, store {_shown(store.url)}", file=sys.stderr)
    config = uvicorn.Config(app, host=host, port=port, log_level=args.log_level, lifespan="on", server_header=False,
                            ws_max_size=1 << 20)
    await uvicorn.Server(config).serve()
    return 0


def start_importing_litellm() -> threading.Thread:
    """Import litellm (~5 s) in a background thread now, so the first tool call does not wait for it; what the
    import built is then kept out of the collector's sight (see `_collector`)."""
    thread = threading.Thread(target=_import_litellm, name="import-litellm", daemon=True)
    thread.start()
    return thread


def _import_litellm() -> None:
    importlib.import_module("litellm")
    gc.freeze()


def load_scripted_models(spec: str) -> None:
    """Import each comma-separated module; importing registers its scripted models."""
    for name in (part.strip() for part in spec.split(",")):
        if name:
            importlib.import_module(name)


async def _serve_stdio(args: argparse.Namespace) -> int:
    from occusim.clients import load_protocol
    from occusim.environments import FaultSettings, OccusimError, ScenarioErrors, UnknownTaskError
    from occusim.server import (
        EpisodeError,
        EpisodeService,
        Store,
        StoreUnavailableError,
        serve_stdio,
    )
    from occusim.service import default_store_url

    try:
        catalog = load_catalog_from(args)
        catalog.task(args.task_id)
    except ScenarioErrors as error:
        return report_catalog_problems("serve", error.errors)
    except UnknownTaskError as error:
        return _usage(str(error))
    faults = FaultSettings(
        mode=args.faults or "E0",
        **{name: value for name, value in (("count", args.fault_count), ("duration", args.fault_duration),
                                           ("window", args.fault_window), ("seed", args.seed)) if value is not None},
    )
    try:
        protocol = load_protocol(args.protocol or "native", args.source)
    except OccusimError as error:
        return _usage(error.user_message())
    mode = protocol.episode_mode(args.mode)
    if args.mode and mode != args.mode:
        return _usage(f"--mode applies to the native protocol; --protocol {protocol.name} simulates in its own "
                      f"{mode} mode")
    store = Store(args.db or default_store_url())
    try:
        await store.init()
    except StoreUnavailableError as error:
        await store.close()
        return _usage(str(error))
    start_importing_litellm()
    interrupted = False
    try:
        service = EpisodeService(catalog, store, world_model=args.world_model, protocol=protocol,
                                 judge=protocol.judge_hook(args.judge_model, catalog),
                                 **({"call_deadline": args.tool_call_timeout} if args.tool_call_timeout else {}))
        # MCP clients read only stdout; a person who started this in a terminal learns what it waits for.
        print(f"occusim serve: {args.task_id} is served over MCP on stdin/stdout; waiting for an MCP client "
              "(Ctrl+C stops)", file=sys.stderr, flush=True)
        try:
            record = await serve_stdio(service, args.task_id, faults=faults, mode=mode,
                                       episode_id=args.episode_id)
        except EpisodeError as error:
            return _usage(str(error))
        except asyncio.CancelledError:  # Ctrl+C: asyncio.run cancels this task
            interrupted = True
    finally:
        await store.close()
    if interrupted:
        print(f"occusim serve: interrupted; stopped, the episode's steps so far are in {_shown(store.url)}",
              file=sys.stderr)
        # A read of stdin that was waiting for the client is abandoned in its thread, which only the end of
        # the process stops: the interpreter's ordinary exit would wait for it.
        from . import exit_at_once

        exit_at_once(130)
    print(f"occusim serve: episode {record.id}: {record.status}, {len(record.steps)} steps in {_shown(store.url)}",
          file=sys.stderr)
    return 0


async def _serve_http(args: argparse.Namespace) -> int:
    collect_less()
    try:
        return await _serve_http_collected(args)
    finally:
        gc.enable()


async def _serve_http_collected(args: argparse.Namespace) -> int:
    import uvicorn

    from occusim.clients import load_protocol
    from occusim.environments import OccusimError, ScenarioErrors
    from occusim.rest import read_deadline_protocol, redact_access_log
    from occusim.server import Store, StoreUnavailableError
    from occusim.service import ConfigError, check_shared_key, create_app, load_settings

    try:
        settings = load_settings(args.config, overrides={
            "host": args.host, "port": args.port, "db": args.db, "world_model": args.world_model,
            "judge_model": args.judge_model, "no_auth": True if args.no_auth else None,
            "bundled": False if args.no_bundled else None, "protocol": args.protocol,
            "tool_call_timeout": args.tool_call_timeout, "redis": args.redis,
            "oauth_issuer": args.oauth_issuer, "oauth_resource": args.oauth_resource,
            "oauth_scopes": args.oauth_scope or None, "oauth_tenant_claim": args.oauth_tenant_claim,
        })
        settings = settings.model_copy(update={
            "sources": [*settings.sources, *args.source],
            "allowed_hosts": [*settings.allowed_hosts, *args.allowed_host],
            "limits": _limits_with_flags(settings.limits, args),
        })
        app = create_app(settings, protocol=load_protocol(settings.protocol, settings.sources))
    except (ConfigError, OccusimError) as error:
        return _usage(str(error))
    except ScenarioErrors as error:
        return report_catalog_problems("serve", error.errors)
    try:
        # Reached and migrated before anything is served, and signing tokens as the others sharing it do.
        async with Store(settings.db, schema=settings.db_schema) as store:
            await check_shared_key(store, settings.token_key())
    except (StoreUnavailableError, ValueError, ConfigError) as error:
        return _usage(str(error))
    if settings.redis:
        problem = await _redis_problem(settings.redis)
        if problem:
            return _usage(problem)
    start_importing_litellm()
    auth = "without auth (loopback only)" if settings.no_auth else f"with {len(settings.api_keys)} API key(s)"
    print(f"occusim serve: http://{settings.host}:{settings.port} {auth}, store {_shown(settings.db)}",
          file=sys.stderr)
    config = uvicorn.Config(
        app, host=settings.host, port=settings.port, log_level=args.log_level, lifespan="on",
        timeout_graceful_shutdown=math.ceil(settings.drain_seconds), server_header=False,
        timeout_keep_alive=math.ceil(settings.keep_alive_seconds),
        http=read_deadline_protocol(header_seconds=settings.header_timeout_seconds,
                                    body_seconds=settings.body_timeout_seconds),
    )
    redact_access_log()  # after uvicorn.Config, which sets up its loggers
    freeze_start_up()
    await uvicorn.Server(config).serve()
    return 0


def _limits_with_flags(limits: Any, args: argparse.Namespace) -> Any:
    """The config's default limits with the --max-* flags over them; ConfigError for a value out of range."""
    from pydantic import ValidationError

    from occusim.service import ConfigError, TenantLimits

    try:
        return TenantLimits.model_validate({**limits.model_dump(exclude_unset=True), **_limit_flags(args)})
    except ValidationError as error:
        problems = "; ".join(f"limits.{'.'.join(map(str, d['loc']))}: {d['msg']}" for d in error.errors())
        raise ConfigError(f"--max-* flags: {problems}") from None


def _limit_flags(args: argparse.Namespace) -> dict[str, float]:
    """The --max-* flags given, as TenantLimits fields; a negative value is refused by the settings."""
    given = {"open_episodes": args.max_open_episodes, "tool_calls_per_minute": args.max_tool_calls_per_minute,
             "cost_per_day_usd": args.max_cost_per_day}
    return {name: value for name, value in given.items() if value is not None}


async def _redis_problem(url: str) -> str | None:
    """Why the service cannot use Redis at `url`, or None once it answered a PING."""
    from occusim.service import CountersUnavailableError, RedisCounters

    try:
        counters = RedisCounters(url)
    except CountersUnavailableError as error:
        return str(error)
    try:
        await counters.ping()
    except CountersUnavailableError as error:
        return f"{error}; start Redis or drop --redis to count usage in this process only"
    finally:
        await counters.close()
    return None


def _shown(db: str) -> str:
    """A store URL fit for a log line: without its password."""
    if "://" not in db:
        return db
    from sqlalchemy.engine import make_url

    return make_url(db).render_as_string(hide_password=True)


def _usage(message: str) -> int:
    print(f"occusim serve: {message}", file=sys.stderr)
    return 2

