"""The `occusim` command line: one module per command, imported only when that command runs."""

from __future__ import annotations

import argparse
import asyncio
import atexit
import importlib
import inspect
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

# name -> (module, one-line summary). Modules load lazily so `occusim --help` stays fast.
COMMANDS: dict[str, tuple[str, str]] = {
    "list": ("occusim.clients.cli.list_cmd", "List the scenarios and tasks of the catalog and any --source."),
    "validate": ("occusim.clients.cli.validate", "Check scenario files: format, schemas, reference solutions."),
    "generate": ("occusim.clients.cli.generate", "Draft a new scenario with an author model, verify it, write a review sheet."),
    "import": ("occusim.clients.cli.import_cmd", "Convert a public benchmark release to native scenario files."),
    "serve": ("occusim.clients.cli.serve", "Serve a task over MCP on stdio, or the whole catalog over HTTP."),
    "run": ("occusim.clients.cli.run", "Evaluate an agent on many tasks, fault modes and trials."),
    "demo": ("occusim.clients.cli.demo", "Run one bundled task end to end, offline, and print what happens."),
    "report": ("occusim.clients.cli.report", "Write tables and plots (Markdown or HTML) for a finished run."),
    "simcheck": ("occusim.clients.cli.simcheck", "Measure a world model's fidelity against the golden reference steps."),
    "compare": ("occusim.clients.cli.compare", "Compare two runs (paired, with p-values), or world models across runs."),
    "view": ("occusim.clients.cli.view", "Browse a run's (or a store's) episodes in a local web viewer."),
    "export": ("occusim.clients.cli.export", "Write a run's episodes as training data (OpenAI or ShareGPT)."),
    "judge": ("occusim.clients.cli.judge", "Judge a stored episode or a trajectory file against its rubric."),
    "judge-serve": ("occusim.clients.cli.judge_serve", "Run the stateless judging service over HTTP."),
    "judge-agreement": ("occusim.clients.cli.judge_agreement",
                        "Compare judge verdicts with labels (a labels file, or reviewers' labels on a run)."),
}

# Commands whose process ends without tearing the interpreter down once they return: by then everything they
# wrote is closed and committed, and tearing down what a run loads (every module's objects, freed one by one)
# took about 0.1 s, a share of a short run's time.
EXIT_AT_ONCE = frozenset({"run"})

EPILOG = """\
examples:
  occusim list --category healthcare-life-sciences
  occusim validate --source occubench:path/to/OccuBench
  occusim serve emergency-dispatcher/chest-pain-delta --faults E2 --seed 7
  occusim serve --http --port 8000

Run `occusim COMMAND --help` for a command's options.
"""


def _top_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="occusim",
        description="Occupational agent benchmarks, served over MCP and simulated by a language world model.",
        epilog=EPILOG,
        # Raw text throughout: the command list in the COMMAND help is laid out by hand.
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"occusim {_version()}")
    lines = "\n".join(f"  {name:<16} {summary}" for name, (_, summary) in COMMANDS.items())
    parser.add_argument("command", metavar="COMMAND", help=f"one of:\n{lines}", nargs="?")
    return parser


def _version() -> str:
    from occusim import __version__

    return __version__


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    top = _top_parser()
    if not argv or argv[0] in ("-h", "--help"):
        top.print_help()
        return 0 if argv else 2
    if argv[0] == "--version":
        top.parse_args(argv)
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        top.print_usage(sys.stderr)
        print(f"occusim: error: unknown command {name!r}; choose from {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    module_name, summary = COMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise
        print(f"occusim: the {name!r} command is not available in this build", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(
        prog=f"occusim {name}",
        description=getattr(module, "DESCRIPTION", summary),
        epilog=getattr(module, "EPILOG", None),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    module.add_arguments(parser)
    args = parser.parse_args(rest)
    try:
        result = module.run(args)
        if inspect.iscoroutine(result):
            result = asyncio.run(result)
    except KeyboardInterrupt:
        print("occusim: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        # occusim's own errors are the user's to act on (a store, a harness, a run folder): mapped by type,
        # here, and only loaded once one was raised.
        from occusim.environments import OccusimError

        if not isinstance(error, OccusimError):
            raise
        print(f"occusim {name}: {error.user_message()}", file=sys.stderr)
        return error.exit_code
    return int(result or 0)


def entry() -> NoReturn:
    """The `occusim` console script and `python -m occusim`: `main`, then the process's end."""
    argv = sys.argv[1:]
    code = main(argv)
    if argv and argv[0] in EXIT_AT_ONCE:
        exit_at_once(code)
    raise SystemExit(code)


def exit_at_once(code: int) -> NoReturn:
    """End the process now with `code`, after what an ordinary exit runs first (the `atexit` handlers, logging's
    flush among them, and the standard streams' flush) but without the interpreter's teardown."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken pipe: nothing more can reach it
            pass
    os._exit(code)
