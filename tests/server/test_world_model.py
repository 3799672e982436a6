"""The world model through the gateway: prompt contents, validation, the repair loop and giving up."""

from __future__ import annotations

import json
import os

import litellm
import pytest

from occusim.environments import state_hash
from occusim.server import EpisodeService
from tests.helpers import CHEST_PAIN, TriageModel, start_episode, triage_catalog


def _system(request):
    return request[0][0]["content"]


def _user(request):
    return request[0][1]["content"]


async def test_tracked_prompt_carries_rules_tools_state_and_only_recent_calls(sqlite_store):
    model = TriageModel()
    service = EpisodeService(triage_catalog(), sqlite_store, world_model=model.model, history_window=2)
    episode = await service.create(CHEST_PAIN)

    await episode.step("get_patient", {"patient_id": "P3"})
    await episode.step("set_priority", {"patient_id": "P1", "priority": 1})
    await episode.step("get_patient", {"patient_id": "P2"})
    await episode.step("list_patients", {})

    system, user = _system(model.requests[-1]), _user(model.requests[-1])
    assert "Priorities run from 1 (immediate) to 5 (non-urgent)" in system
    assert "- list_patients: List the waiting patients." in system
    assert "- set_priority: Set a patient's triage priority." in system
    assert "- patients: Waiting patients with their priority." in system
    assert "state_patch" in system
    # Only the called tool's full definition is sent, with the call.
    called = json.loads(user.split("### The tool being called\n", 1)[1].split("\n", 1)[0])
    assert called["name"] == "list_patients" and called["output_schema"]["required"] == ["patients"]
    assert "Read one patient's record." not in user
    state = json.loads(user.split("```json\n", 1)[1].split("\n```", 1)[0])
    assert state == episode.state
    assert state["patients"][0]["priority"] == 1
    recent = [json.loads(line) for line in user.split("### Recent calls")[1].split("\n\n")[0].splitlines()[1:]]
    assert [(c["tool"], c["arguments"]) for c in recent] == [
        ("set_priority", {"patient_id": "P1", "priority": 1}), ("get_patient", {"patient_id": "P2"})]
    assert recent[1]["observation"]["name"] == "Ben Okafor"
    assert "(1 earlier call is already reflected in the state)" in user
    assert '### Call 4\n{"name":"list_patients","arguments":{}}' in user
    schema = model.requests[-1][1]["response_schema"]
    assert schema["required"] == ["observation", "state_patch"]
    assert schema["properties"]["state_patch"]["type"] == "array"
    operation = schema["properties"]["state_patch"]["items"]
    shapes = {tuple(shape["properties"]["op"]["enum"]): shape for shape in operation["anyOf"]}
    assert {op for ops in shapes for op in ops} == {"add", "replace", "test", "remove", "move", "copy"}
    assert all(shape["properties"]["path"]["pattern"] == "^(/log|/patients)(/.*)?$" for shape in shapes.values())
    assert all(shape["additionalProperties"] is False for shape in shapes.values())
    assert "value" in shapes[("add", "replace", "test")]["required"] and "from" in shapes[("move", "copy")]["required"]
    assert schema["properties"]["observation"]["anyOf"][0]["additionalProperties"] is False


async def test_extra_observation_fields_pass_validation_when_the_schema_allows_them(sqlite_store):
    model = TriageModel(replies=[{"observation": {"ok": True, "patient_id": "P1", "priority": 1, "bed": "A4"},
                                  "state_patch": []}])
    episode = await start_episode(sqlite_store, model)

    outcome = await episode.step("set_priority", {"patient_id": "P1", "priority": 1})

    assert model.calls == 1 and outcome.observation["bed"] == "A4"


async def test_tracked_prompt_stays_the_same_size_as_the_episode_grows(sqlite_store):
    model = TriageModel()
    service = EpisodeService(triage_catalog(), sqlite_store, world_model=model.model, history_window=2)
    episode = await service.create(CHEST_PAIN)
    for _ in range(8):
        await episode.step("get_patient", {"patient_id": "P2"})

    sizes = [len(_system(r)) + len(_user(r)) for r in model.requests]
    assert sizes[0] < sizes[1] < sizes[2]
    assert len(set(sizes[4:])) == 1


async def test_history_mode_uses_the_verbatim_prompt_and_the_full_history(sqlite_store):
    verbatim = "### 1. Role\nYou are the LWM for {{triage}}.\n{{initial_state}}: {{}}"
    catalog = triage_catalog(simulator_prompt=verbatim)
    model = TriageModel()
    episode = await start_episode(sqlite_store, model, catalog=catalog, mode="history")

    await episode.step("get_patient", {"patient_id": "P1"})
    await episode.step("set_priority", {"patient_id": "P1", "priority": 1})
    outcome = await episode.step("list_patients", {})

    messages, request = model.requests[-1]
    assert messages[0] == {"role": "system", "content": verbatim}
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert json.loads(messages[1]["content"]) == {"name": "get_patient", "arguments": {"patient_id": "P1"}}
    assert json.loads(messages[2]["content"])["name"] == "Ana Ruiz"
    assert json.loads(messages[5]["content"]) == {"name": "list_patients", "arguments": {}}
    assert "state_patch" not in json.dumps(request["response_schema"])
    assert "patients" in outcome.observation
    # No patches in history mode: the tracked state never moves.
    assert episode.state == episode.record.initial_state
    assert all(step.state_patch == [] for step in episode.record.steps)


async def test_history_mode_without_a_verbatim_prompt_renders_rules_state_and_tools(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model, mode="history")
    await episode.step("list_patients", {})

    system = _system(model.requests[0])
    assert "Priorities run from 1" in system
    assert '"Ana Ruiz"' in system and '"set_priority"' in system
    assert "Current state" not in system


async def test_garbage_output_is_repaired_with_the_exact_problem(sqlite_store):
    model = TriageModel(replies=["Sure! The patient list is long."])
    episode = await start_episode(sqlite_store, model)

    outcome = await episode.step("list_patients", {})

    assert not outcome.is_error and len(outcome.observation["patients"]) == 3
    assert model.calls == 2
    retry = model.requests[1][0]
    assert retry[-2] == {"role": "assistant", "content": "Sure! The patient list is long."}
    assert "rejected" in retry[-1]["content"] and "not valid JSON" in retry[-1]["content"]
    assert outcome.record.usage.calls == 2


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ({"observation": {"id": "P1", "name": "Ana Ruiz"}, "state_patch": []},
         "observation (root): 'priority' is a required property"),
        ({"observation": {"id": "P1", "name": "Ana Ruiz", "priority": "high"}, "state_patch": []},
         "observation priority: 'high' is not of type 'integer'"),
        ({"observation": ["P1"], "state_patch": []}, "observation must be a JSON object, got list"),
        ({"id": "P1", "name": "Ana Ruiz", "priority": 3}, 'the reply has no "observation" field'),
        ({"observation": {"id": "P1", "name": "Ana Ruiz", "priority": 3}},
         'the reply has no "state_patch" field'),
        ({"observation": {"id": "P1", "name": "Ana Ruiz", "priority": 3},
          "state_patch": [{"op": "replace", "path": "/patients/7/priority", "value": 1}]},
         '"state_patch" does not apply to the current state'),
        ({"observation": {"id": "P1", "name": "Ana Ruiz", "priority": 3},
          "state_patch": [{"op": "replace", "path": "/patients/0/priority", "value": 9}]},
         "after the patch, state patients[0].priority: 9 is greater than the maximum of 5"),
    ],
)
async def test_invalid_answers_are_sent_back_and_repaired(sqlite_store, reply, problem):
    model = TriageModel(replies=[reply])
    episode = await start_episode(sqlite_store, model)

    outcome = await episode.step("get_patient", {"patient_id": "P1"})

    assert model.calls == 2
    assert problem in model.requests[1][0][-1]["content"]
    assert outcome.observation == {"id": "P1", "name": "Ana Ruiz", "priority": 3, "notes": "chest pain", "ward": "A"}
    assert not outcome.is_error
    assert episode.state == episode.record.initial_state


async def test_the_model_gives_up_after_max_repairs_with_a_clear_error(sqlite_store):
    model = TriageModel(replies=["nope", "still nope", {"observation": {}, "state_patch": "x"}])
    episode = await start_episode(sqlite_store, model)

    outcome = await episode.step("set_priority", {"patient_id": "P1", "priority": 1})

    assert model.calls == 3  # the first answer and max_repairs=2 repairs
    assert outcome.is_error
    error = outcome.observation["error"]
    assert error["type"] == "simulator_error"
    assert "after 3 attempts" in error["message"] and "state_patch" in error["message"]
    assert outcome.record.error == error["message"]
    assert outcome.record.usage.calls == 3
    assert episode.state == episode.record.initial_state
    assert outcome.record.state_hash == state_hash(episode.record.initial_state)
    stored = await sqlite_store.load_episode(episode.id)
    assert stored.steps[0].observation == outcome.observation

    # The episode stays usable and the next call goes through.
    again = await episode.step("set_priority", {"patient_id": "P1", "priority": 1})
    assert not again.is_error and episode.state["patients"][0]["priority"] == 1


async def test_a_provider_outage_is_recorded_and_the_episode_continues(sqlite_store, monkeypatch):
    monkeypatch.setenv("OCCUSIM_LLM_RETRIES", "1")
    outage = [litellm.InternalServerError(message="upstream down", llm_provider="openai", model="sim")]
    model = TriageModel(replies=outage)
    episode = await start_episode(sqlite_store, model)

    outcome = await episode.step("list_patients", {})

    assert outcome.is_error
    # An outage has its own type, apart from the `simulator_error` of a model that gave no valid answer.
    assert outcome.observation["error"]["type"] == "simulator_unavailable"
    assert "unavailable (provider: HTTP 500 InternalServerError after 1 attempt)" in outcome.observation["error"]["message"]
    assert outcome.record.error == outcome.observation["error"]["message"]
    stored = await sqlite_store.load_episode(episode.id)
    assert stored.steps[0].observation["error"]["type"] == "simulator_unavailable"
    assert len(episode.record.steps) == 1
    assert (await episode.step("list_patients", {})).is_error is False


async def test_a_domain_error_observation_is_accepted_without_repair(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model)

    outcome = await episode.step("get_patient", {"patient_id": "P9"})

    assert model.calls == 1
    assert outcome.is_error and outcome.observation == {"error": "no patient P9"}
    assert outcome.record.error is None


async def test_usage_latency_and_state_hash_are_recorded(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model)

    read = await episode.step("list_patients", {})
    write = await episode.step("set_priority", {"patient_id": "P1", "priority": 1})

    assert read.record.usage.calls == 1 and read.record.usage.prompt_tokens > 0
    assert read.record.latency_ms > 0
    assert read.record.state_hash == state_hash(episode.record.initial_state)
    assert write.record.state_patch[0] == {"op": "replace", "path": "/patients/0/priority", "value": 1}
    assert write.record.state_hash == state_hash(episode.state) != read.record.state_hash
    assert episode.state["log"] == ["P1->1"]


def test_generation_schema_closes_nested_objects_but_keeps_declared_fields():
    import jsonschema

    from occusim.environments import Tool
    from occusim.server._simulator_prompt import observation_schema

    tool = Tool(
        name="get_unit",
        description="Read a unit.",
        input_schema={"type": "object", "properties": {}},
        output_schema={
            "type": "object",
            "properties": {
                "unit": {"type": "object", "properties": {"id": {"type": "string"}, "eta": {"type": "integer"}}},
                "crews": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            },
        },
    )
    schema = observation_schema(tool)
    jsonschema.validate({"unit": {"id": "M41", "eta": 6}, "crews": [{"name": "A"}]}, schema)
    jsonschema.validate({"error": "no such unit"}, schema)
    for invented in ({"unit": {"id": "M41", "date_of_issue": "x"}}, {"crews": [{"name": "A", "extra": 1}]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(invented, schema)


@pytest.mark.parametrize(("read_only", "writes", "answer", "admitted"), [
    (True, None, [], True),
    (True, None, [{"op": "remove", "path": "/log/0"}], False),
    (False, ["/units"], [{"op": "replace", "path": "/units/M41/status", "value": "dispatched"}], True),
    (False, ["/units"], [{"op": "add", "path": "/log/-", "value": "x"}], False),
    (False, ["/units"], [{"op": "add", "path": "/unitsX", "value": 1}], False),
    (False, ["/units"], [{"op": "copy", "from": "/log/0", "path": "/units/M9"}], True),
    (None, None, [{"op": "add", "path": "/log/-", "value": "x"}], True),
    (None, None, [{"op": "add", "path": "/elsewhere", "value": 1}], False),
])
def test_the_answer_schema_states_the_tools_write_contract(read_only, writes, answer, admitted):
    """A constrained decoder cannot write from a read-only tool, nor outside a tool's `writes`, nor outside
    the state's fields when the tool declares none."""
    import jsonschema

    from occusim.environments import Tool
    from occusim.server._simulator_prompt import tracked_response_schema

    tool = Tool(name="t", description="A tool.", input_schema={"type": "object"}, read_only=read_only, writes=writes)
    schema = tracked_response_schema(tool, ["log", "units"])
    reply = {"observation": {"ok": True}, "state_patch": answer}
    if admitted:
        jsonschema.validate(reply, schema)
    else:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(reply, schema)


def _prompt_text(request) -> str:
    return "".join(m["content"] for m in request[0])


async def test_consecutive_calls_share_every_part_of_the_prompt_but_the_new_call(sqlite_store):
    """What changes comes last, so a provider's prompt cache reads only the end again: after a read, the next
    prompt repeats the previous one up to the end of its recent calls; after a write, up to the state."""
    model = TriageModel()
    service = EpisodeService(triage_catalog(), sqlite_store, world_model=model.model, history_window=6)
    episode = await service.create(CHEST_PAIN)
    await episode.step("get_patient", {"patient_id": "P2"})
    await episode.step("list_patients", {})
    await episode.step("set_priority", {"patient_id": "P1", "priority": 1})
    await episode.step("get_patient", {"patient_id": "P3"})

    first, second, write, after_write = (_prompt_text(r) for r in model.requests)
    # After a read: everything up to the end of the earlier prompt's state and recent calls is the same text.
    assert len(os.path.commonprefix([first, second])) >= first.index("### The tool being called") - 2
    shared = len(os.path.commonprefix([second, write]))
    assert shared >= second.index("### The tool being called") - 2
    # After the write the state differs, so the prefix ends inside the state, after the system prompt.
    shared_after_write = len(os.path.commonprefix([write, after_write]))
    assert len(_system(model.requests[0])) < shared_after_write < after_write.index("### Recent calls")
