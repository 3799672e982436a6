"""ModelConfig.for_role: explicit arguments, role variables, OCCUSIM_MODEL, then the local model."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from occusim.llm import LLMError, ModelConfig

OCCUSIM_VARS = [
    f"OCCUSIM_{role}_{what}"
    for role in ("WORLD_MODEL", "JUDGE", "AGENT")
    for what in ("MODEL", "API_BASE", "API_KEY")
] + ["OCCUSIM_MODEL"]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in OCCUSIM_VARS:
        monkeypatch.delenv(name, raising=False)


def test_explicit_arguments_win(monkeypatch):
    monkeypatch.setenv("OCCUSIM_JUDGE_MODEL", "openai/gpt-4.1-mini")
    monkeypatch.setenv("OCCUSIM_JUDGE_API_BASE", "http://env/v1")
    monkeypatch.setenv("OCCUSIM_MODEL", "anthropic/claude-sonnet-4")

    config = ModelConfig.for_role("judge", model="gemini/gemini-2.5-pro", api_base="http://arg/v1", api_key="k")

    assert config == ModelConfig("gemini/gemini-2.5-pro", "http://arg/v1", "k")


def test_role_variables_then_global_model(monkeypatch):
    monkeypatch.setenv("OCCUSIM_WORLD_MODEL_MODEL", "hosted_vllm/qwen3-32b")
    monkeypatch.setenv("OCCUSIM_WORLD_MODEL_API_BASE", "http://10.0.0.5:8000/v1")
    monkeypatch.setenv("OCCUSIM_WORLD_MODEL_API_KEY", "secret")
    monkeypatch.setenv("OCCUSIM_MODEL", "openai/gpt-4.1")

    world = ModelConfig.for_role("world_model")
    agent = ModelConfig.for_role("agent")

    assert world == ModelConfig("hosted_vllm/qwen3-32b", "http://10.0.0.5:8000/v1", "secret")
    assert agent == ModelConfig("openai/gpt-4.1")
    assert "secret" not in repr(world)


def test_unknown_role_lists_the_roles():
    with pytest.raises(LLMError, match="world_model, judge, agent"):
        ModelConfig.for_role("grader")


def test_kind_flags():
    assert ModelConfig("local").is_local
    assert ModelConfig("local:/models/x.gguf").is_local
    assert not ModelConfig("openai/local-model").is_local
    assert ModelConfig("scripted/x").is_scripted


def test_falls_back_to_local_with_a_single_notice():
    script = (
        "from occusim.llm import ModelConfig\n"
        "import sys\n"
        "configs = [ModelConfig.for_role(r) for r in ('world_model', 'judge', 'agent', 'judge')]\n"
        "print(','.join(c.model for c in configs))\n"
        "print('litellm' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in OCCUSIM_VARS}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)

    models, litellm_loaded = result.stdout.split()
    assert models == "local,local,local,local"
    # Resolving configuration must stay cheap: litellm is imported only when a model is called.
    assert litellm_loaded == "False"
    notice = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(notice) == 1
    assert "smoke" in notice[0] and "OCCUSIM_MODEL" in notice[0]
