"""A process killed with SIGKILL mid-episode loses no completed step; the episode reopens and continues."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from occusim.server import EpisodeService, Store
from tests.helpers import TriageModel, triage_catalog

CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    from occusim.environments import FaultSettings
    from occusim.server import EpisodeService, Store
    from tests.helpers import CHEST_PAIN, TriageModel, triage_catalog

    CALLS = [("list_patients", {}), ("set_priority", {"patient_id": "P1", "priority": 1}),
             ("get_patient", {"patient_id": "P1"}), ("set_priority", {"patient_id": "P2", "priority": 2}),
             ("get_patient", {"patient_id": "P2"})]

    class Hanging(TriageModel):
        async def hang(self, messages, request):
            if self.calls >= 3:
                print("IN_FLIGHT", flush=True)
                await asyncio.sleep(3600)
            return self(messages, request)

    async def main():
        store = Store(sys.argv[1])
        await store.init()
        model = Hanging()
        from occusim.llm import scripted_model
        service = EpisodeService(triage_catalog(), store, world_model=scripted_model(model.hang, name="hanging"))
        episode = await service.create(CHEST_PAIN, episode_id="crash-1", faults=FaultSettings(mode="E2", seed=1))
        for tool, arguments in CALLS:
            outcome = await episode.step(tool, arguments)
            print(json.dumps(outcome.record.model_dump(mode="json")), flush=True)

    asyncio.run(main())
    """
)


def _run_until_in_flight(db: Path, script: Path) -> list[dict]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    child = subprocess.Popen([sys.executable, str(script), str(db)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    completed = []
    try:
        for line in child.stdout:
            if line.startswith("IN_FLIGHT"):
                child.send_signal(signal.SIGKILL)
                break
            completed.append(json.loads(line))
    finally:
        child.kill()
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL, child.stderr.read()
    return completed


async def test_sigkill_mid_episode_keeps_every_completed_step(tmp_path):
    db = tmp_path / "crash.db"
    script = tmp_path / "child.py"
    script.write_text(CHILD)

    completed = _run_until_in_flight(db, script)

    assert [step["index"] for step in completed] == [0, 1, 2]
    assert (tmp_path / "crash.db-wal").exists()  # the steps live in the write-ahead log, not yet checkpointed

    store = Store(db)
    await store.init()
    try:
        # The restarted server knows the same world model under the same name.
        model = TriageModel(name="hanging")
        service = EpisodeService(triage_catalog(), store, world_model=model.model)
        episode = await service.open("crash-1")

        assert [step.model_dump(mode="json") for step in episode.record.steps] == completed
        assert episode.status == "open"
        assert episode.state["patients"][0]["priority"] == 1
        assert episode.state["log"] == ["P1->1"]
        assert episode.record.steps[-1].state_hash == completed[-1]["state_hash"]

        outcome = await episode.step("set_priority", {"patient_id": "P2", "priority": 2})
        assert outcome.record.index == 3 and not outcome.is_error
        assert episode.state["patients"][1]["priority"] == 2
        record = await episode.submit("P1 first, then P2")
        reloaded = await store.load_episode("crash-1")
        assert reloaded.status == "submitted" and len(reloaded.steps) == 4
        assert reloaded.steps[:3] == record.steps[:3]
    finally:
        await store.close()
