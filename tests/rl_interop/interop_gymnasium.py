"""occusim.rl.OccusimEnv in a virtualenv with occusim[rl]: check_env passes, rewards equal `occusim judge`."""

from __future__ import annotations

from pathlib import Path

from _framework_run import judged_score, run_in_framework


def test_gymnasium_checks_the_environment_and_rewards_the_verdict(tmp_path: Path) -> None:
    report = run_in_framework("gymnasium", "gymnasium_episode.py", tmp_path)
    assert report["gymnasium"].split(".")[0] >= "1"
    rewards = [episode["reward"] for episode in report["episodes"]]
    assert rewards == [1.0, 0.0]
    for episode in report["episodes"]:
        assert episode["terminated"] and episode["judged"]
        assert episode["reward"] == judged_score(tmp_path, episode["episode_id"])
