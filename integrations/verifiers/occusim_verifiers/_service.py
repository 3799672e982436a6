"""An `occusim serve --http` process started by the taskset, for the time the taskset's process lives."""

from __future__ import annotations

import atexit
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

_START_SECONDS = 120.0


class ServiceStartError(RuntimeError):
    """The occusim service did not start; the message holds the end of its log."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_service(executable: str, serve_args: list[str]) -> str:
    """Start `executable serve --http` on a free loopback port (no API keys: loopback only), wait until it
    answers /healthz, stop it when this process exits; its base URL."""
    port = _free_port()
    log = Path(tempfile.mkstemp(prefix="occusim-serve-", suffix=".log")[1])
    command = [
        executable,
        "serve",
        "--http",
        "--no-auth",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        *serve_args,
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    atexit.register(_stop, process)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + _START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServiceStartError(
                f"{' '.join(command)} exited with {process.returncode}:\n"
                f"{log.read_text(errors='replace')[-2000:]}"
            )
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    _stop(process)
    raise ServiceStartError(
        f"{' '.join(command)} did not answer /healthz within {_START_SECONDS:.0f} s:\n"
        f"{log.read_text(errors='replace')[-2000:]}"
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
