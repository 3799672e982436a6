"""What an `occusim run` loads before its first episode: not the hosted service's OAuth token verifier (a JWT
library and an HTTP client), which no run's transport uses; its settings are read without it."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
from occusim.clients import plan_batch, run_batch
import occusim.clients._episode_runner, occusim.clients._transports
from occusim.service import ServiceSettings
print(ServiceSettings(oauth_issuer="https://issuer.example", public_url="https://occusim.example/").oauth())
print(sorted(name for name in ("httpx", "jwt") if name in sys.modules))
"""


def test_the_batch_runner_loads_no_oauth_verifier():
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    settings, loaded = result.stdout.splitlines()
    assert "issuer='https://issuer.example'" in settings and "resource='https://occusim.example/'" in settings
    assert loaded == "[]"
