"""Client CPU per complete() call over real HTTP, through the lean path and through litellm, against the
fake OpenAI-compatible endpoint (bench/_fake_openai.py, its own process, answering at once), one call at a
time and 64 at once. Prints milliseconds of this process's CPU per call and the ratio lean / litellm.

    python bench/bench_gateway_paths.py            # BENCH_CALLS=600 by default
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from occusim.llm import ModelConfig, complete  # noqa: E402

CALLS = int(os.environ.get("BENCH_CALLS", "600"))
MESSAGES = [
    {"role": "system", "content": "You simulate a hospital triage desk. " * 40},
    {"role": "user", "content": '<agent_action>{"name": "list_waiting_patients", "arguments": {}}</agent_action>'},
]


async def cpu_per_call(config: ModelConfig, lean: bool, at_once: int) -> float:
    os.environ["OCCUSIM_LEAN_HTTP"] = "1" if lean else "0"
    await complete(config, MESSAGES, cache=False)  # warm-up: imports, connection, price map

    async def caller(count: int) -> None:
        for _ in range(count):
            await complete(config, MESSAGES, cache=False)

    started = time.process_time()
    await asyncio.gather(*(caller(CALLS // at_once) for _ in range(at_once)))
    return (time.process_time() - started) / (CALLS // at_once * at_once) * 1000.0


async def measure(url: str) -> None:
    config = ModelConfig(model="openai/fake-world", api_base=url, api_key="sk-bench-0123456789")
    for at_once in (1, 64):
        lean = await cpu_per_call(config, True, at_once)
        through_litellm = await cpu_per_call(config, False, at_once)
        print(f"complete() over HTTP, {at_once:>2} at once: lean {lean:5.2f} ms CPU/call, litellm "
              f"{through_litellm:5.2f} ms CPU/call, lean / litellm {lean / through_litellm:4.2f}x")


def main() -> int:
    endpoint = subprocess.Popen([sys.executable, str(Path(__file__).with_name("_fake_openai.py")), "--latency", "0"],
                                stdout=subprocess.PIPE, text=True)
    try:
        assert endpoint.stdout is not None
        asyncio.run(measure(endpoint.stdout.readline().strip()))
    finally:
        endpoint.terminate()
        endpoint.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
