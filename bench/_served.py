"""The hosted service in a subprocess for the HTTP benchmarks: the triage test scenario, a scripted world model.

The scenario and the scripted models come from tests.helpers; the server process registers them through
OCCUSIM_SCRIPTED_MODELS, exactly as the interop tests do.
"""

from __future__ import annotations

import contextlib
import copy
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import _checkout  # noqa: F401
import httpx
import yaml

from tests.helpers import CHEST_PAIN, TRIAGE, free_port, server_env

TASK = CHEST_PAIN
API_KEY = "bench-key-0123456789"


def bench_scenario(max_steps: int) -> dict:
    """The triage scenario with room for `max_steps` calls per episode."""
    scenario = copy.deepcopy(TRIAGE)
    scenario["tasks"][0]["max_steps"] = max_steps
    return scenario


@contextlib.contextmanager
def served(max_steps: int = 500, world_model: str = "scripted/triage", *, env: dict[str, str] | None = None,
           config: dict[str, object] | None = None,
           process_out: list[subprocess.Popen[bytes]] | None = None) -> Iterator[str]:
    """Run `occusim serve --http` on a free loopback port; yields its base URL. `env` adds to the server's
    environment, `config` is its --config file's settings; the process is appended to `process_out` (to read
    its CPU time)."""
    with tempfile.TemporaryDirectory() as folder:
        port = free_port()
        source = Path(folder) / "triage.yaml"
        source.write_text(yaml.safe_dump(bench_scenario(max_steps)))
        settings = Path(folder) / "service.yaml"
        settings.write_text(yaml.safe_dump(config or {}))
        process = subprocess.Popen(
            [sys.executable, "-m", "occusim", "serve", "--http", "--port", str(port), "--source", str(source),
             "--no-bundled", "--db", str(Path(folder) / "bench.db"), "--world-model", world_model,
             "--log-level", "warning", "--config", str(settings)],
            env=server_env(Path(folder), OCCUSIM_API_KEYS=API_KEY, **(env or {})),
        )
        if process_out is not None:
            process_out.append(process)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the benchmark server did not start")
                with contextlib.suppress(httpx.TransportError):
                    if httpx.get(f"{url}/healthz").status_code == 200:
                        break
                time.sleep(0.1)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=60)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]
