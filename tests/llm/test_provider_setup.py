"""Configuration errors (a refused connection, an unknown host, a key missing or refused, an unknown model)
fail at the first attempt and name the setting to check; outages stay transient. Against real loopback HTTP."""

from __future__ import annotations

import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from occusim.llm import ModelConfig, ProviderConfigError, ProviderError, RetryPolicy, complete
from occusim.llm._provider_setup import _shown
from tests.helpers import Reply, provider_stub

USER = [{"role": "user", "content": "ping"}]
FAST = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.01)
PATHS = ["1", "0"]  # the lean HTTP path, then litellm's


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("lean", PATHS)
async def test_a_refused_connection_names_the_url_and_its_variable(monkeypatch, lean):
    monkeypatch.setenv("OCCUSIM_LEAN_HTTP", lean)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    monkeypatch.setenv("OCCUSIM_AGENT_API_BASE", url)
    config = ModelConfig.for_role("agent", model="openai/some-model", api_key="sk-test-0123456789")

    with pytest.raises(ProviderConfigError) as raised:
        await complete(config, USER, cache=False, retry=FAST, role="agent")

    error = raised.value
    assert error.attempts == 1 and error.kind == "endpoint unreachable"
    assert url in error.setting and "OCCUSIM_AGENT_API_BASE" in error.setting
    assert url in str(error)
    # What agents may see names the kind, never the URL.
    assert "configuration error: endpoint unreachable" in error.summary and url not in error.summary


@pytest.mark.parametrize("lean", PATHS)
async def test_an_unknown_host_is_a_configuration_error(monkeypatch, lean):
    monkeypatch.setenv("OCCUSIM_LEAN_HTTP", lean)
    config = ModelConfig(model="openai/some-model", api_base="http://no-such-host.invalid/v1",
                         api_key="sk-test-0123456789")

    with pytest.raises(ProviderConfigError) as raised:
        await complete(config, USER, cache=False, retry=FAST, role="world_model", timeout=20)

    assert raised.value.attempts == 1 and raised.value.kind == "endpoint unreachable"
    assert "http://no-such-host.invalid/v1" in raised.value.setting
    assert "OCCUSIM_WORLD_MODEL_API_BASE" in raised.value.setting


@pytest.mark.parametrize("lean", PATHS)
@pytest.mark.parametrize("status", [401, 403])
async def test_a_refused_key_names_the_key_variable(monkeypatch, lean, status):
    monkeypatch.setenv("OCCUSIM_LEAN_HTTP", lean)
    monkeypatch.setenv("OCCUSIM_JUDGE_API_KEY", "sk-wrong-0123456789")
    with provider_stub(Reply({"error": {"message": "invalid key"}}, status=status)) as stub:
        config = ModelConfig.for_role("judge", model="openai/stub", api_base=stub.url)
        with pytest.raises(ProviderConfigError) as raised:
            await complete(config, USER, cache=False, retry=FAST, role="judge")

    assert len(stub.requests) == 1
    assert raised.value.kind == "key refused" and "OCCUSIM_JUDGE_API_KEY" in raised.value.setting
    assert "sk-wrong-0123456789" not in str(raised.value)


@pytest.mark.parametrize("lean", PATHS)
async def test_an_unknown_model_is_a_configuration_error(monkeypatch, lean):
    monkeypatch.setenv("OCCUSIM_LEAN_HTTP", lean)
    with provider_stub(Reply({"error": {"message": "no such model"}}, status=404)) as stub:
        with pytest.raises(ProviderConfigError) as raised:
            await complete(stub.model, USER, cache=False, retry=FAST, role="agent")

    assert raised.value.kind == "model unknown"
    assert "'openai/stub'" in raised.value.setting and "OCCUSIM_AGENT_MODEL" in raised.value.setting


async def test_a_missing_key_names_the_provider_variable(monkeypatch):
    for name in ("OPENAI_API_KEY", "OCCUSIM_AGENT_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)

    with pytest.raises(ProviderConfigError) as raised:
        await complete(ModelConfig(model="openai/gpt-4.1-mini"), USER, cache=False, retry=FAST, role="agent")

    assert raised.value.attempts == 1 and raised.value.kind == "key missing"
    assert "OPENAI_API_KEY" in raised.value.setting and "OCCUSIM_AGENT_API_KEY" in raised.value.setting


@pytest.mark.parametrize("lean", PATHS)
@pytest.mark.parametrize("status", [429, 500, 503])
async def test_rate_limits_and_server_errors_stay_transient(monkeypatch, lean, status):
    monkeypatch.setenv("OCCUSIM_LEAN_HTTP", lean)
    with provider_stub(Reply({"error": {"message": "busy"}}, status=status)) as stub:
        with pytest.raises(ProviderError) as raised:
            await complete(stub.model, USER, cache=False, retry=FAST)

    assert not isinstance(raised.value, ProviderConfigError)
    assert len(stub.requests) == 3 and raised.value.attempts == 3


@given(user=st.text(alphabet="abcxyz019", min_size=1, max_size=12),
       password=st.text(alphabet="PQRSTsecret789", min_size=4, max_size=20),
       port=st.integers(min_value=1, max_value=65535))
def test_an_endpoint_is_shown_without_its_credentials(user, password, port):
    shown = _shown(f"https://{user}:{password}@api.example.test:{port}/v1")

    assert shown == f"https://api.example.test:{port}/v1"
