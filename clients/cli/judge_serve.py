"""`occusim judge-serve`: the stateless judging service alone, `POST /v1/judge` over HTTP."""

from __future__ import annotations

import argparse
import sys

# A client gets this long for a request's headers, then for its body; the connection is closed past it.
HEADER_SECONDS, BODY_SECONDS = 30.0, 60.0

DESCRIPTION = """\
Serve POST /v1/judge with uvicorn: the body {task, scenario?, trajectory, votes?, seed?, llm_items?}
(Task, Scenario and EpisodeRecord JSON) is answered with the Verdict JSON. Malformed bodies get 400
(not JSON), 415 (JSON under another Content-Type), 422 (field errors listed) or 413 (over --max-body-mb);
a trajectory of another task gets 409, a judge model outage 502. Every error is {"error", "type",
"errors"?}. The OpenAPI document is at /openapi.json.

The service has no authentication: it binds to loopback only, unless --allow-remote is given (then put
it behind a proxy that authenticates, or use the hosted `occusim serve --http`, which mounts the same
route behind API keys). The judge model is --judge-model, else OCCUSIM_JUDGE_MODEL, then OCCUSIM_MODEL,
then the local model.
"""

EPILOG = """\
examples:
  occusim judge-serve --judge-model openai/gpt-4.1
  curl -s localhost:8100/v1/judge -H 'content-type: application/json' -d @request.json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8100, help="port (default 8100)")
    parser.add_argument("--judge-model", metavar="M", help="litellm model string of the judge")
    parser.add_argument(
        "--votes", type=int, default=3, metavar="K", help="default votes per llm check (default 3)"
    )
    parser.add_argument(
        "--max-body-mb", type=float, default=16.0, metavar="MB", help="request size limit (default 16)"
    )
    parser.add_argument(
        "--allow-remote", action="store_true", help="bind a non-loopback interface without auth"
    )
    parser.add_argument(
        "--allowed-host", action="append", default=[], metavar="HOST",
        help="also accept this Host header (repeatable; 'name:*' for any port); loopback names and the "
        "bound address are accepted, any other Host is answered 421 (DNS rebinding)",
    )
    parser.add_argument("--no-cache", action="store_true", help="do not reuse cached judge responses")
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"],
        help="log detail on stderr (default info)",
    )


async def run(args: argparse.Namespace) -> int:
    import uvicorn

    from occusim.judge import JUDGE_PATH, MAX_VOTES, judge_app
    from occusim.llm import ModelConfig
    from occusim.rest import read_deadline_protocol, redact_access_log
    from occusim.service import host_guard, is_loopback, trusted_hosts

    if not is_loopback(args.host) and not args.allow_remote:
        print(
            f"occusim judge-serve: refusing to serve {args.host!r} without authentication; bind 127.0.0.1, "
            "pass --allow-remote behind an authenticating proxy, or use `occusim serve --http`",
            file=sys.stderr,
        )
        return 2
    if not 1 <= args.votes <= MAX_VOTES:
        print(
            f"occusim judge-serve: --votes must be between 1 and {MAX_VOTES}, got {args.votes}",
            file=sys.stderr,
        )
        return 2
    if args.no_cache:
        from occusim.llm import set_default_cache

        set_default_cache(None)
    model = ModelConfig.for_role("judge", model=args.judge_model)
    guard = host_guard(trusted_hosts(args.host, args.allowed_host),
                       ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])
    app = judge_app(model, votes=args.votes, max_body_bytes=int(args.max_body_mb * 1024 * 1024),
                    middleware=[guard])
    url = f"http://{args.host}:{args.port}{JUDGE_PATH}"
    print(f"occusim judge-serve: POST {url}, judge model {model.model}", file=sys.stderr)
    config = uvicorn.Config(
        app, host=args.host, port=args.port, log_level=args.log_level, server_header=False,
        http=read_deadline_protocol(header_seconds=HEADER_SECONDS, body_seconds=BODY_SECONDS),
    )
    redact_access_log()  # after uvicorn.Config, which sets up its loggers
    await uvicorn.Server(config).serve()
    return 0
