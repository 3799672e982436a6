"""occusim.rl.trl in TRL 1.16's own virtualenv: tools bound as TRL binds them (the triage scenario's in detail,
every bundled scenario's through transformers' `get_json_schema`), rewards equal to `occusim judge`."""

from __future__ import annotations

from pathlib import Path

from _framework_run import judged_score, run_in_framework

from occusim.environments import load_catalog
from tests.helpers import TRIAGE


def test_trl_binds_the_episodes_tools_and_rewards_the_verdict(tmp_path: Path) -> None:
    report = run_in_framework("trl", "trl_episode.py", tmp_path)
    assert report["trl"].startswith("1.16.")
    schemas = report["schemas"]
    assert sorted(schemas) == sorted([*(tool["name"] for tool in TRIAGE["tools"]), "submit_result"])
    for tool in TRIAGE["tools"]:
        assert schemas[tool["name"]]["type"] == "function"
        schema = schemas[tool["name"]]["function"]
        assert schema["name"] == tool["name"]
        assert schema["description"] == tool["description"]
        declared = tool["input_schema"]
        assert set(schema["parameters"]["properties"]) == set(declared["properties"])
        assert schema["parameters"].get("required", []) == declared.get("required", [])
        for name, prop in declared["properties"].items():
            assert schema["parameters"]["properties"][name]["type"] == prop["type"]
    assert schemas["submit_result"]["function"]["parameters"]["required"] == ["answer"]
    first, second = report["rollouts"]
    assert "chest pain" in first["brief"]
    assert [first["reward"], second["reward"]] == [1.0, 0.0]
    for rollout in (first, second):
        assert rollout["reward"] == judged_score(tmp_path, rollout["episode_id"])
    # Every bundled scenario's tools bind as methods whose schemas transformers can make.
    assert report["catalog_unbound"] == {}
    bundled = load_catalog([], bundled=True).scenarios
    assert sorted(report["catalog_bound"]) == sorted(s.id for s in bundled.values() if s.tasks)
