"""`occusim view`: browse a run's episodes (or a store's) in a local web page."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from occusim.server import Store
    from occusim.viewer import EpisodeSource, LabelDesk

DESCRIPTION = """\
Serve a web viewer on this machine (127.0.0.1 only) and open it in the browser. The index lists the
episodes with their ids and filters them by task, category, fault mode, outcome, world model and simulator
flag; it works without JavaScript. An episode's page shows its timeline: each call with its arguments, the
observation shown to the agent and, where a fault changed it, the true one beside it with the difference
marked; each state patch and the state after it; the final answer; the verdict with every item, check, vote
and reason; usage and latency.

Give a RUN_DIR (the --out folder of `occusim run`: results.jsonl for the index, its store for the steps),
or --db for a store alone (every episode in it, newest first). Both are read as they are, at each page
load, so a running batch shows its episodes as they finish. A run folder's HTML report (`occusim report
RUN_DIR --format html --out RUN_DIR/report.html`) is served at /report and linked from every page; its
episode links open here. Nothing is fetched from the network.

--label --reviewer NAME turns on labelling mode: below each episode's verdict, a form gives every rubric item
a pass/fail and a note; the judge's verdicts are hidden unless --show-judge (they would sway the labels
that are to measure the judge). Each save appends one JSON line per changed label to RUN_DIR/labels/NAME.jsonl (the
last label per episode and item counts; the format is judge/review-label.schema.json). Compare the labels
with the judge, and reviewers with each other, with `occusim judge-agreement --labels RUN_DIR/labels/*.jsonl`.
"""

EPILOG = """\
examples:
  occusim view runs/gpt41mini
  occusim view runs/gpt41mini --port 8800 --no-browser
  occusim view --db occusim.db
  occusim view --db postgresql://occusim@db.internal/occusim
  occusim view runs/gpt41mini --label --reviewer alice
"""

DEFAULT_PORT = 7580
REPORT_FILE = "report.html"  # in the run folder, served at /report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", nargs="?", help="the --out folder of `occusim run`")
    parser.add_argument("--db", metavar="URL",
                        help="an episode store (SQLite path or URL, PostgreSQL URL); with RUN_DIR, the run's store")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0 picks a free one)")
    parser.add_argument("--no-browser", action="store_true", help="print the address without opening a browser")
    parser.add_argument("--label", action="store_true",
                        help="labelling mode: a pass/fail and a note per rubric item, saved to RUN_DIR/labels/")
    parser.add_argument("--reviewer", metavar="NAME", help="who labels (with --label): the labels file's name")
    parser.add_argument("--show-judge", action="store_true",
                        help="with --label: show the judge's verdicts too (hidden by default, so as not to sway "
                             "the labels that measure the judge)")


def _fail(message: str) -> int:
    print(f"occusim view: {message}", file=sys.stderr)
    return 2


async def run(args: argparse.Namespace) -> int:
    import uvicorn

    from occusim.viewer import viewer_app

    if args.run_dir is None and args.db is None:
        return _fail("give a RUN_DIR (the --out folder of `occusim run`) or --db URL; see --help")
    labels = _label_desk(args)
    if isinstance(labels, str):
        return _fail(labels)
    if not 0 <= args.port <= 65535:
        return _fail(f"--port {args.port} is not a port number (0-65535)")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", args.port))
        listener.listen(128)  # before the browser is asked to connect
    except OSError as error:
        listener.close()
        return _fail(f"cannot listen on 127.0.0.1:{args.port} ({error.strerror or error}); choose another --port")
    with listener:
        opened = await _open(args)
        if isinstance(opened, str):
            return _fail(opened)
        source, store = opened

        @contextlib.asynccontextmanager
        async def closing_the_store(_app: object) -> AsyncIterator[None]:
            # Inside the server's shutdown, before it hands a Ctrl+C back as KeyboardInterrupt.
            try:
                yield
            finally:
                if store is not None:
                    await store.close()

        address = f"http://127.0.0.1:{listener.getsockname()[1]}/"
        report = Path(args.run_dir) / REPORT_FILE if args.run_dir is not None else None
        app = viewer_app(source, lifespan=closing_the_store, labels=labels, report=report)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        print(f"occusim view: serving {source.title} at {address} (Ctrl+C to stop)", file=sys.stderr, flush=True)
        if labels is not None:
            print(f"occusim view: labelling as {labels.reviewer}, saving to {labels.path}", file=sys.stderr,
                  flush=True)
        if not args.no_browser:
            import webbrowser

            webbrowser.open(address)
        await server.serve(sockets=[listener])
    return 0


def _label_desk(args: argparse.Namespace) -> LabelDesk | None | str:
    """The reviewer's desk in labelling mode (None without --label); or why labelling cannot start."""
    from occusim.judge import LabelFileError, reviewer_problem
    from occusim.viewer import LabelDesk

    if not args.label:
        if args.reviewer is not None or args.show_judge:
            return "--reviewer and --show-judge go with --label"
        return None
    if args.run_dir is None:
        return "--label needs a RUN_DIR: the labels are saved beside the run (RUN_DIR/labels/NAME.jsonl)"
    if not args.reviewer:
        return "--label needs --reviewer NAME (the labels file's name)"
    problem = reviewer_problem(args.reviewer)
    if problem is not None:
        return problem
    desk = LabelDesk.beside_run(Path(args.run_dir), args.reviewer, blind=not args.show_judge)
    try:
        desk.check_file()
    except LabelFileError as error:
        return f"the labels file cannot be read back, so new labels would not count:\n{error}"
    return desk


async def _open(args: argparse.Namespace) -> tuple[EpisodeSource, Store | None] | str:
    """The episodes to serve and the store they are read from (opened here); or why they cannot be."""
    from occusim.analysis import RunDir, RunError
    from occusim.clients import RunEpisodes, store_missing
    from occusim.environments import load_catalog
    from occusim.server import Store
    from occusim.service import StoreEpisodes

    if args.run_dir is None:
        missing = store_missing(args.db)
        if missing is not None:
            return f"{missing} (--db)"
        store = Store(args.db)
        await store.init()
        return StoreEpisodes(store, catalog=await asyncio.to_thread(load_catalog)), store
    run_dir = RunDir(args.run_dir)
    try:
        config = await asyncio.to_thread(run_dir.read_config)
    except RunError as error:
        return str(error)
    url = args.db or config.db or run_dir.default_db
    missing = store_missing(url)
    if missing is not None:
        if args.db is not None:
            return f"{missing} (--db)"
        return RunEpisodes(run_dir, None, store_note=f"{missing}: only the run's results are shown"), None
    run_store = Store(url)
    await run_store.init()
    return RunEpisodes(run_dir, run_store), run_store
