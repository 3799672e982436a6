"""E2 degradations of the bundled catalog's answers stay within the advertised output schemas, never raise,
and reach an MCP SDK client as results it accepts."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import jsonpointer
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from mcp import Client

from occusim.environments import FaultSettings, Scenario, Tool, load_catalog, reports_error
from occusim.server import EpisodeService, Store, build_mcp_server
from occusim.server._degrade import _DEGRADERS, degrade
from occusim.server._mcp_server import advertised_output_schema
from tests.helpers import golden_world

CATALOG = load_catalog()
TOOLS = sorted(
    ((scenario, tool) for scenario in CATALOG.scenarios.values() for tool in scenario.tools),
    key=lambda pair: (pair[0].id, pair[1].name),
)
SEEDS = range(6)


def advertised(tool: Tool) -> Draft202012Validator:
    assert tool.output_schema is not None
    return Draft202012Validator(advertised_output_schema(tool.output_schema))


def mismatch(validator: Draft202012Validator, observation: object) -> str | None:
    errors = sorted(validator.iter_errors(observation), key=lambda e: list(e.absolute_path))
    return "; ".join(f"{list(e.absolute_path)}: {e.message[:160]}" for e in errors) or None


@pytest.mark.parametrize(("scenario", "tool"), TOOLS, ids=[f"{s.id}.{t.name}" for s, t in TOOLS])
def test_every_degradation_of_a_catalog_example_fits_the_advertised_schema(scenario: Scenario, tool: Tool):
    example = tool.example_output
    assert tool.output_schema is not None and example is not None, f"{scenario.id}.{tool.name} lacks them"
    validator = advertised(tool)
    # A stale answer repeats an earlier true answer verbatim: the declared schema's answers must pass.
    assert Draft202012Validator(tool.output_schema).is_valid(example)
    assert mismatch(validator, example) is None

    for name, degrader in _DEGRADERS.items():
        for seed in SEEDS:
            # Each degradation on its own, so that the fallbacks of `degrade` cannot hide a bad one; the
            # stale one is shown the example as the earlier answer of a call that now answers differently.
            observation, previous = ({}, example) if name == "stale" else (example, None)
            result = degrader(observation, tool.output_schema, previous, random.Random(seed))
            if result is not None:
                shown, detail = result
                problem = mismatch(validator, shown)
                assert problem is None, f"{name} (seed {seed}, {detail}) breaks the advertised schema: {problem}"
            chosen = degrade(example, name, output_schema=tool.output_schema, previous=None,
                             rng=random.Random(seed))
            if chosen is not None:
                assert mismatch(validator, chosen[0]) is None


def test_fields_required_inside_list_items_are_never_dropped():
    scenario = CATALOG.scenario("emergency-dispatcher")
    tool = scenario.tool("get_protocol_card")
    card = {**tool.example_output, "determinants": [
        {"code": "10-D-1", "level": "DELTA", "descriptor": "Not alert"},
        {"code": "10-C-1", "level": "CHARLIE", "descriptor": "Abnormal breathing"},
    ]}
    for seed in range(40):
        for label in ("drop_fields", "null_fields"):
            shown, fault = degrade(card, label, output_schema=tool.output_schema, previous=None,
                                   rng=random.Random(seed))
            assert all(entry.keys() == {"code", "level", "descriptor"} for entry in shown["determinants"])
            assert all(None not in entry.values() for entry in shown["determinants"])
            assert {"protocol", "determinants", "response_plan"} <= shown.keys()
            # `response_plan` is an object the schema says nothing about: it is left whole.
            assert shown["response_plan"] == card["response_plan"]
            assert "/determinants/" not in fault.detail and "/response_plan/" not in fault.detail


@pytest.fixture
async def service(tmp_path: Path):
    async with Store(tmp_path / "episodes.db") as store:
        yield EpisodeService(CATALOG, store)


REPLAYED = sorted(task.id for task in CATALOG.tasks.values()
                  if task.scenario in ("emergency-dispatcher", "chargeback-analyst"))


@pytest.mark.parametrize("task_id", REPLAYED)
async def test_replayed_e2_episodes_degrade_without_raising(service: EpisodeService, task_id: str):
    task = CATALOG.task(task_id)
    implicit = 0
    for seed in range(4):
        faults = FaultSettings(mode="E2", count=2, duration=2, seed=seed)
        episode = await service.create(task_id, world_model=golden_world(task, f"golden-{task.id.replace('/', '-')}"), faults=faults)
        for step in task.reference_solution:
            outcome = await episode.step(step.tool, step.arguments)
            tool = episode.scenario.tool(step.tool)
            assert mismatch(advertised(tool), outcome.observation) is None, outcome.record.fault
            implicit += outcome.record.fault is not None
        # The true answers were kept whatever was shown.
        assert [s.true_observation or s.observation for s in episode.record.steps] == [
            s.observation for s in task.reference_solution]
    assert implicit


async def test_an_sdk_client_accepts_every_result_of_e2_episodes(service: EpisodeService):
    task = CATALOG.task("emergency-dispatcher/chest-pain-delta")
    labels = []
    # Seeds enough that the drawn fault places reach every call of the reference, and every kind of degradation.
    for seed in range(32):
        episode = await service.create(task.id, world_model=golden_world(task, f"golden-{task.id.replace('/', '-')}"),
                                       faults=FaultSettings(mode="E2", count=2, duration=2, seed=seed))
        # The SDK client validates structured content against the advertised schemas and raises on a mismatch.
        async with Client(build_mcp_server(episode)) as client:
            await client.list_tools()
            for step in task.reference_solution:
                result = await client.call_tool(step.tool, step.arguments)
                assert not result.is_error and result.structured_content is not None
        labels += [(s.tool, s.fault.label) for s in episode.record.steps if s.fault is not None]
    assert ("get_protocol_card", "drop_fields") in labels
    assert {label for _, label in labels} >= {"drop_fields", "null_fields"}


def test_the_advertised_schema_admits_cut_lists_shrunk_objects_and_alternatives_that_now_overlap():
    schema = {
        "type": "object",
        "minProperties": 2,
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2, "contains": {"const": "urgent"}},
            "contact": {"oneOf": [
                {"type": "object", "required": ["phone"],
                 "properties": {"kind": {"const": "phone"}, "phone": {"type": "string"}}},
                {"type": "object", "properties": {"kind": {"const": "email"}, "phone": {"type": "string"}}},
            ]},
        },
    }
    validator = Draft202012Validator(advertised_output_schema(schema))
    assert Draft202012Validator(schema).is_valid(
        {"tags": ["urgent", "a"], "contact": {"kind": "phone", "phone": "555"}})
    # A list cut to one item without the one `contains` asked for; a single field left; a contact whose
    # distinguishing field was nulled now fits both alternatives.
    assert validator.is_valid({"tags": ["routine"]})
    assert validator.is_valid({"tags": ["urgent"], "contact": {"kind": None, "phone": "555"}})
    assert not validator.is_valid({"tags": "urgent"})
    assert not validator.is_valid({"contact": {"kind": "fax", "phone": "555"}})


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 6) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(
        st.sampled_from(["id", "count", "total", "items", "error", "note", "n", "rows", "numRows", "size"]),
        inner, max_size=5),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(observation=JSON, previous=JSON, label=st.sampled_from(sorted(_DEGRADERS)), seed=st.integers(0, 99))
def test_degrading_any_answer_never_raises_and_keeps_errors_and_counts_honest(observation, previous, label, seed):
    before = copy.deepcopy(observation)
    result = degrade(observation, label, output_schema=None, previous=previous, rng=random.Random(seed))
    assert observation == before
    if reports_error(observation):
        assert result is None
        return
    if result is None:
        return
    shown, fault = result
    assert shown != observation and not (fault.label == "stale" and reports_error(shown))
    if fault.label == "truncate_list":
        path, _, change = fault.detail.partition(": ")
        old, new = (int(part.split()[0]) for part in change.split(" -> ")[:2])
        pointer = "" if path == "/" else path
        assert len(jsonpointer.resolve_pointer(shown, pointer)) == new < old
        # No count beside the list, in the objects around it, still states its former length.
        parts = pointer.split("/")
        for depth in range(len(parts) - 1, 0, -1):
            holder = jsonpointer.resolve_pointer(shown, "/".join(parts[:depth]))
            if not isinstance(holder, dict):
                break
            assert not any(key in ("count", "total", "n", "numRows", "size") and type(value) is int and value == old
                           for key, value in holder.items())
