"""Every schema the server advertises is portable: nullable and multi-type values as `anyOf`, never `type`
arrays, which function-declaration formats such as Gemini's refuse; and the rewrite keeps the meaning."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from occusim.clients import connect
from occusim.environments import Catalog, load_catalog, load_occubench
from occusim.server import EpisodeService, build_mcp_server
from occusim.server._portable_schema import portable_schema, type_arrays
from tests.helpers import TriageModel


async def _advertised_tools(scenarios, store) -> dict[str, list]:
    catalog = Catalog()
    for scenario in scenarios:
        assert not catalog.add(scenario, "test")
    service = EpisodeService(catalog, store, world_model=TriageModel().model)
    listed = {}
    for scenario in scenarios:
        episode = await service.create(scenario.tasks[0].id)
        async with connect(build_mcp_server(episode)) as client:
            listed[scenario.id] = (await client.list_tools()).tools
    return listed


def _arrays_in(listed: dict[str, list]) -> list[str]:
    return [f"{scenario}/{tool.name}{where}"
            for scenario, tools in listed.items() for tool in tools
            for where in [*(f" input{p}" for p in type_arrays(tool.input_schema)),
                          *(f" output{p}" for p in type_arrays(tool.output_schema or {}))]]


async def test_no_bundled_tool_advertises_a_type_array(sqlite_store):
    scenarios = list(load_catalog().scenarios.values())
    declared = [tool for s in scenarios for tool in s.tools
                if type_arrays(tool.input_schema) or type_arrays(tool.output_schema or {})]

    listed = await _advertised_tools(scenarios, sqlite_store)

    assert declared, "the catalog declares type arrays, so this test shows they are rewritten"
    assert sum(len(tools) for tools in listed.values()) == sum(len(s.tools) + 1 for s in scenarios)
    assert _arrays_in(listed) == []


async def test_no_occubench_tool_advertises_a_type_array(sqlite_store, occubench_root):
    scenarios = [scenario for scenario, _ in load_occubench(occubench_root)]

    listed = await _advertised_tools(scenarios, sqlite_store)

    assert listed and _arrays_in(listed) == []


def test_a_type_array_becomes_one_branch_per_type_with_its_constraints_and_annotations_on_top():
    schema = {"type": ["string", "null", "string"], "maxLength": 3, "description": "a code",
              "properties": {"a": {"type": ["integer"]}}}

    assert portable_schema(schema) == {
        "description": "a code",
        "anyOf": [{"type": "string", "maxLength": 3, "properties": {"a": {"type": "integer"}}},
                  {"type": "null", "maxLength": 3, "properties": {"a": {"type": "integer"}}}],
    }
    assert schema["type"] == ["string", "null", "string"], "the declared schema is left as it was"


TYPES = ["string", "integer", "number", "boolean", "null", "array", "object"]
leaf = st.fixed_dictionaries(
    {"type": st.lists(st.sampled_from(TYPES), min_size=1, max_size=4) | st.sampled_from(TYPES)},
    optional={"maxLength": st.integers(0, 4), "minimum": st.integers(-2, 2), "maxItems": st.integers(0, 2),
              "required": st.just(["k"]), "description": st.just("d")},
)
schemas = st.recursive(leaf, lambda inner: st.one_of(
    st.builds(lambda t, items: {**t, "items": items}, leaf, inner),
    st.builds(lambda t, props: {**t, "properties": props}, leaf, st.dictionaries(st.sampled_from("kxy"), inner,
                                                                                  max_size=2)),
    st.builds(lambda alternatives: {"anyOf": alternatives}, st.lists(inner, min_size=1, max_size=3)),
), max_leaves=6)
values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-3, 3, allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("kxy"), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300)
@given(schemas, values)
def test_the_rewrite_accepts_exactly_what_the_declared_schema_accepts(schema, value):
    portable = portable_schema(schema)

    assert type_arrays(portable) == []
    assert (jsonschema.Draft202012Validator(schema).is_valid(value)
            == jsonschema.Draft202012Validator(portable).is_valid(value)), json.dumps(portable)


@pytest.mark.parametrize("declared", [{"type": "object"}, {}, {"enum": [["a", "b"]], "type": "array"}])
def test_schemas_without_type_arrays_come_back_equal(declared):
    assert portable_schema(declared) == declared
