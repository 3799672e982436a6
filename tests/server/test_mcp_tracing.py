"""The MCP SDK's per-request OpenTelemetry spans: left out while no tracer provider is set (they would be
no-ops that cost CPU on every call), kept once one is."""

from __future__ import annotations

from mcp import Client
from mcp.server._otel import OpenTelemetryMiddleware
from opentelemetry import trace

from occusim.server import build_mcp_server
from tests.helpers import TriageModel, start_episode


class _Provider(trace.TracerProvider):
    """A configured provider, as an OpenTelemetry SDK or an instrumentation sets one."""

    def get_tracer(self, *args, **kwargs) -> trace.Tracer:
        return trace.NoOpTracer()


def _traced(server) -> bool:
    return any(isinstance(layer, OpenTelemetryMiddleware) for layer in server.middleware)


async def test_without_a_tracer_provider_requests_open_no_span(sqlite_store):
    model = TriageModel()
    server = build_mcp_server(await start_episode(sqlite_store, model))

    assert not _traced(server)
    async with Client(server) as client:
        result = await client.call_tool("get_patient", {"patient_id": "P1"})
    assert not result.is_error and model.calls == 1


async def test_with_a_tracer_provider_the_sdks_spans_stay(sqlite_store, monkeypatch):
    monkeypatch.setattr(trace, "get_tracer_provider", _Provider)
    model = TriageModel()
    server = build_mcp_server(await start_episode(sqlite_store, model))

    assert _traced(server)
    async with Client(server) as client:
        result = await client.call_tool("get_patient", {"patient_id": "P1"})
    assert not result.is_error and model.calls == 1
