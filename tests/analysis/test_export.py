"""`occusim export`: OpenAI and ShareGPT rows, filters, and loading the output with `datasets`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from datasets import load_dataset

from occusim.analysis import OpenAIExample, ShareGPTExample, export_examples
from occusim.clients.cli import main
from tests.helpers import TOOLS, synthetic_rows, write_run


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    write_run(folder, synthetic_rows())
    return folder


def test_openai_rows_keep_the_conversation_exactly():
    rows = synthetic_rows()
    row = next(r for r in rows if r.status == "ok" and r.fault_mode == "E2")

    (example,) = [e for e in export_examples([row], "openai")]

    assert isinstance(example, OpenAIExample)
    assert [m["role"] for m in example.messages] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert example.messages[3]["content"] == row.messages[3]["content"]  # the degraded result, as received
    assert example.messages[2]["tool_calls"][0]["function"]["arguments"] == '{"dispute_id": "D-1"}'
    assert example.messages[4]["content"] == "Checked."
    assert json.loads(example.tools) == TOOLS
    assert example.reward == row.score
    assert [(item.id, item.passed) for item in example.verdict] == [("state-ok", True), ("answer", row.passed)]
    assert example.metadata.fault_mode == "E2" and example.metadata.faults_injected == ["truncate_list"]
    assert (example.metadata.agent_model, example.metadata.world_model) == ("agent-x", "world-y")


def test_sharegpt_turns_map_roles_and_calls():
    row = next(r for r in synthetic_rows() if r.status == "ok")

    (example,) = list(export_examples([row], "sharegpt"))

    assert isinstance(example, ShareGPTExample)
    assert example.system == "You are a Chargeback Analyst."
    turns = [(turn.from_, turn.value) for turn in example.conversations]
    assert [role for role, _ in turns] == ["human", "function_call", "observation", "gpt", "function_call",
                                           "observation"]
    assert json.loads(turns[1][1]) == {"name": "get_dispute", "arguments": {"dispute_id": "D-1"}}
    assert json.loads(example.model_dump_json(by_alias=True))["conversations"][0]["from"] == "human"
    assert [tool["name"] for tool in json.loads(example.tools)] == ["get_dispute", "submit_result"]


def test_infra_errors_are_never_exported_and_min_score_filters():
    rows = synthetic_rows()
    scored = [r for r in rows if r.status == "ok"]

    assert len(list(export_examples(rows, "openai"))) == len(scored) == len(rows) - 1
    high = list(export_examples(rows, "openai", min_score=1.0))
    assert high and len(high) == sum(1 for r in scored if r.score >= 1.0)
    assert all(example.reward >= 1.0 for example in high)


@pytest.mark.parametrize("fmt", ["openai", "sharegpt"])
def test_the_cli_output_loads_with_datasets(run_dir: Path, tmp_path: Path, fmt: str):
    out = tmp_path / "train.jsonl"

    assert main(["export", str(run_dir), "--format", fmt, "--out", str(out)]) == 0

    dataset = load_dataset("json", data_files=str(out), split="train", cache_dir=str(tmp_path / "hf"))
    assert dataset.num_rows == 23
    assert set(dataset.column_names) >= {"reward", "verdict", "metadata", "tools"}
    assert sorted(set(dataset["reward"])) == [0.5, 1.0]
    categories = {meta["category"] for meta in dataset["metadata"]}
    assert categories == {"Healthcare & Life Sciences", "Public Service & Governance", "Commerce & Consumer"}


def test_the_cli_writes_to_stdout_and_refuses_a_folder_that_is_no_run(run_dir: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]):
    assert main(["export", str(run_dir), "--format", "openai", "--min-score", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(json.loads(line)["reward"] == 1.0 for line in lines)

    assert main(["export", str(tmp_path / "nothing"), "--format", "openai"]) == 2
    assert "run.json not found" in capsys.readouterr().err
