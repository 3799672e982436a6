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
    from occusim.viewer import EpisodeSource

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
"""

EPILOG = """\
examples:
  occusim view runs/gpt41mini
  occusim view runs/gpt41mini --port 8800 --no-browser
  occusim view --db occusim.db
  occusim view --db postgresql://occusim@db.internal/occusim
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


def _fail(message: str) -> int:
    print(f"occusim view: {message}", file=sys.stderr)
    return 2


async def run(args: argparse.Namespace) -> int:
    import uvicorn

    from occusim.viewer import viewer_app

    if args.run_dir is None and args.db is None:
        return _fail("give a RUN_DIR (the --out folder of `occusim run`) or --db URL; see --help")
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
        app = viewer_app(source, lifespan=closing_the_store, report=report)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        print(f"occusim view: serving {source.title} at {address} (Ctrl+C to stop)", file=sys.stderr, flush=True)
        if not args.no_browser:
            import webbrowser

            webbrowser.open(address)
        await server.serve(sockets=[listener])
    return 0


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
