"""Generated hostile JSON (lone surrogates, NUL, deep nesting, huge and non-finite numbers, odd keys) thrown at
tool arguments, final answers and every REST body: never a 5xx or -32603, no model call for input that is
refused, and every stored episode stays readable. SQLite always; PostgreSQL under the `postgres` marker."""

from __future__ import annotations

import asyncio
import json
import math
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from occusim.environments import json_problems
from occusim.server import RefusedInputError, StepOutcome, Store
from occusim.server._schemas import violations
from tests.helpers import (
    CHEST_PAIN,
    POSTGRES_URL,
    TRIAGE,
    LiveServer,
    TriageModel,
    hosted_settings,
    start_episode,
)

PG_URL = POSTGRES_URL
PG_DSN = PG_URL.replace("postgresql+asyncpg://", "postgresql://", 1)
GET_PATIENT_SCHEMA = TRIAGE["tools"][1]["input_schema"]
BOUNDED = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                           HealthCheck.too_slow])


@dataclass(frozen=True)
class Deep:
    """A value nested `depth` lists deep, written out by `as_text` (json.dumps itself recurses)."""

    depth: int
    leaf: Any

    def value(self) -> Any:
        value = self.leaf
        for _ in range(self.depth):
            value = [value]
        return value


ODD_CHARACTERS = ["\ud800", "\udfff", "\x00", "\u2028", "\ufeff", "\U0001d11e", "é", '"', "\\"]
texts = (st.text(alphabet=st.sampled_from(ODD_CHARACTERS) | st.characters(codec="utf-8"), max_size=12)
         | st.sampled_from(["$ref", "__proto__", "", "a" * 10_000]))
numbers = (st.integers() | st.integers(min_value=10**90, max_value=10**130) | st.floats()
           | st.sampled_from([math.inf, -math.inf, math.nan, 1e308, -0.0]))
scalars = st.none() | st.booleans() | numbers | texts | st.sampled_from(["P1", "P2", "P404"])
hostile_json = st.recursive(
    scalars,
    lambda children: (st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4)
                      | st.builds(Deep, st.integers(50, 3000), children)),
    max_leaves=12,
)
arguments = st.dictionaries(texts | st.just("patient_id"), hostile_json, max_size=4) | st.fixed_dictionaries(
    {"patient_id": texts | st.sampled_from(["P1", "P2", "P1\x00", "P\ud8001"])})


def as_value(value: Any) -> Any:
    if isinstance(value, Deep):
        return Deep(value.depth, as_value(value.leaf)).value()
    if isinstance(value, list):
        return [as_value(item) for item in value]
    if isinstance(value, dict):
        return {key: as_value(item) for key, item in value.items()}
    return value


def as_text(value: Any) -> str:
    """JSON text as a hostile client might send it: surrogates escaped, NaN and Infinity as bare words."""
    if isinstance(value, Deep):
        return "[" * value.depth + as_text(value.leaf) + "]" * value.depth
    if isinstance(value, list):
        return "[" + ", ".join(as_text(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(key)}: {as_text(item)}" for key, item in value.items()) + "}"
    return json.dumps(value)


def accepted(arguments: Any) -> bool:
    """Whether a call with these arguments reaches the world model."""
    return not json_problems(arguments) and not violations(GET_PATIENT_SCHEMA, arguments)


async def drop_schema(schema: str) -> None:
    connection = await asyncpg.connect(PG_DSN)
    try:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await connection.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request, tmp_path):
    """Where the episodes live: (store URL, PostgreSQL schema or None)."""
    if request.param == "sqlite":
        yield str(tmp_path / "episodes.db"), None
        return
    schema = f"occusim_test_{uuid.uuid4().hex[:12]}"
    yield PG_URL, schema
    asyncio.run(drop_schema(schema))


@pytest.fixture
def in_process(backend):
    """One event loop and store for every example of an in-process property."""
    url, schema = backend
    with asyncio.Runner() as runner:
        store = Store(url, schema=schema)
        runner.run(store.init())
        yield runner, store
        runner.run(store.close())


@BOUNDED
@given(arguments=arguments, answer=texts | hostile_json)
def test_in_process_episodes_refuse_or_record_and_stay_readable(in_process, arguments, answer):
    runner, store = in_process
    arguments, answer = as_value(arguments), as_value(answer)

    async def one_episode() -> None:
        model = TriageModel()
        episode = await start_episode(store, model)
        try:
            outcome = await episode.step("get_patient", arguments)
        except RefusedInputError:
            assert json_problems(arguments)
            assert episode.record.steps == []
        else:
            assert isinstance(outcome, StepOutcome)
        assert model.calls == (1 if accepted(arguments) else 0)
        try:
            await episode.submit(answer)
        except RefusedInputError:
            assert not isinstance(answer, str) or json_problems(answer)
            await episode.submit("fallback answer")
        stored = await store.load_episode(episode.id)
        stored.model_dump_json().encode("utf-8")
        assert stored.status == "submitted"

    runner.run(one_episode())


@pytest.fixture
def served(backend, tmp_path):
    url, schema = backend
    model = TriageModel(name=f"property-{uuid.uuid4().hex[:8]}")
    overrides: dict[str, Any] = {"db": url, "world_model": model.model}
    if schema is not None:
        overrides["db_schema"] = schema
    with LiveServer(hosted_settings(tmp_path, **overrides)) as server, httpx.Client(timeout=60) as http:
        yield server, http, model


def post(http: httpx.Client, url: str, text: str, headers: dict[str, str]) -> httpx.Response:
    response = http.post(url, content=text.encode("utf-8", "surrogatepass"),
                         headers={**headers, "Content-Type": "application/json"})
    assert response.status_code < 500, (url, text[:200], response.text[:500])
    return response


def readable(server: LiveServer, http: httpx.Client, episode_id: str) -> dict[str, Any]:
    status = http.get(f"{server.url}/v1/episodes/{episode_id}", headers=server.headers())
    assert status.status_code == 200, status.text[:500]
    return status.json()


@BOUNDED
@given(arguments=arguments, answer=hostile_json, body=hostile_json, field=st.sampled_from(
    ["task_id", "world_model", "faults", "fault_count", "seed", "mode", "extra"]))
def test_over_http_no_5xx_no_internal_error_no_model_call_for_refused_input(served, arguments, answer, body, field):
    server, http, model = served
    headers = server.headers()
    post(http, f"{server.url}/v1/episodes", as_text(body), headers)
    post(http, f"{server.url}/v1/episodes", as_text({"task_id": CHEST_PAIN, field: body}), headers)
    post(http, f"{server.url}/v1/judge", as_text({"task": body, "record": arguments}), headers)

    created = http.post(f"{server.url}/v1/episodes", json={"task_id": CHEST_PAIN}, headers=headers).json()
    mcp = {"Authorization": f"Bearer {created['token']}", "Accept": "application/json, text/event-stream",
           "Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "property", "version": "1"}}}
    mcp["Mcp-Session-Id"] = http.post(created["mcp_url"], headers=mcp, json=init).headers["mcp-session-id"]
    before = model.calls
    call = ('{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_patient", "arguments": '
            + as_text(arguments) + "}}")
    answered = post(http, created["mcp_url"], call, mcp)
    assert "-32603" not in answered.text, answered.text[:500]
    parsed = json.loads(as_text(arguments)) if max(_depths(arguments)) < 900 else None
    assert model.calls - before == (1 if parsed is not None and accepted(parsed) else 0)

    submit = ('{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "submit_result", "arguments": '
              '{"answer": ' + as_text(answer) + "}}}")
    assert "-32603" not in post(http, created["mcp_url"], submit, mcp).text
    post(http, f"{server.url}/v1/episodes/{created['episode_id']}/submit", as_text({"answer": answer}), headers)
    readable(server, http, created["episode_id"])


def _depths(value: Any, depth: int = 0) -> list[int]:
    if isinstance(value, Deep):
        return _depths(value.leaf, depth + value.depth)
    if isinstance(value, list):
        return [depth, *(d for item in value for d in _depths(item, depth + 1))]
    if isinstance(value, dict):
        return [depth, *(d for item in value.values() for d in _depths(item, depth + 1))]
    return [depth]
