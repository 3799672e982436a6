"""`generate_scenario` driven by a scripted author model: every stage, every way an answer is sent back, and every
verification failure routed to the stage that owns it."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from occusim.clients._generate import generate_scenario
from occusim.clients._generate_author import AuthorSettings
from occusim.clients._generate_draft import owning_stage
from occusim.clients._generate_output import GenerationOutputError, write_generation
from occusim.clients._generate_result import GenerationSettings
from occusim.environments import BUNDLED_CATALOG, load_scenario_file, validate_scenario
from occusim.llm import ModelConfig
from occusim.server import WorldModel
from tests.helpers._author import SOUND_PARTS, ScriptedAuthor, golden_replay_world, sound_part

GOLDEN_STEPS = SOUND_PARTS["references"]["references"][0]["reference_solution"]


def _settings(author: ScriptedAuthor, world: str, **options) -> GenerationSettings:
    author_options = {key: options.pop(key) for key in ("retries", "task_count") if key in options}
    return GenerationSettings(
        "Pharmacy technician",
        "Healthcare & Life Sciences",
        AuthorSettings(ModelConfig(author.model), **{"task_count": 1, **author_options}),
        WorldModel(world, max_repairs=0),
        concurrency=1,
        **options,
    )


def _world(name: str, wrong_answers: int = 0) -> str:
    return golden_replay_world(name, GOLDEN_STEPS, misread=wrong_answers)


async def test_five_sound_answers_make_a_verified_scenario(tmp_path):
    author = ScriptedAuthor("sound-author")

    result = await generate_scenario(_settings(author, _world("sound-world")))

    assert result.verified and result.failure is None
    assert [call.stage for call in result.trail] == ["brief", "tools", "tasks", "rubrics", "references"]
    assert all(call.accepted for call in result.trail)
    scenario = result.scenario
    assert scenario is not None and scenario.id == "refill-desk"
    assert [task.id for task in scenario.tasks] == ["refill-desk/one-refill"]
    assert "(source: 21 CFR 1306.22(a))" in scenario.rules
    assert scenario.tasks[0].initial_state_patch["prescriptions"]["102"]["refills_left"] == 0
    assert len(scenario.tasks[0].reference_solution) == 2
    # Each stage reads what the earlier ones wrote: the references stage sees the rubric and the trap.
    prompt = author.requests["references"][0][1]["content"]
    assert '"refill-counted"' in prompt and "has no refills left" in prompt
    assert '"title":"ReferencesPart"' in prompt


async def test_the_draft_and_its_review_sheet_are_written(tmp_path):
    result = await generate_scenario(_settings(ScriptedAuthor("written-author"), _world("written-world")))

    yaml_path, review_path = write_generation(result, tmp_path / "drafts")

    assert yaml_path.name == "refill-desk.yaml" and review_path.name == "refill-desk.review.md"
    text = yaml_path.read_text(encoding="utf-8")
    assert text.startswith("# DRAFT written by `occusim generate`") and "# - 21 CFR 1306.22(a)" in text
    scenario = load_scenario_file(yaml_path)
    assert validate_scenario(scenario, str(yaml_path)) == []
    sheet = review_path.read_text(encoding="utf-8")
    assert "**Verified**" in sheet
    assert "| 1 | A refill is dispensed only while refills_left is above 0" in sheet
    assert "| 21 CFR 1306.22(a) | 0 refills left | [ ] |" in sheet
    assert "prescription 102, for the same drug, has no refills left" in sheet
    assert "- (brief) whether the state caps refills lower than the federal rule" in sheet
    assert "| refill-desk/one-refill | 4 | 0 | 0 | pass |" in sheet
    assert "| all | 2 | 100.0% (2/2)" in sheet


async def test_an_answer_that_is_no_part_is_sent_back_with_its_problems():
    broken = sound_part("brief")
    del broken["rules"]
    author = ScriptedAuthor("retry-author", {"brief": ["I would rather not.", broken]})

    result = await generate_scenario(_settings(author, _world("retry-world")))

    assert result.verified
    assert [(c.stage, c.attempt, c.accepted) for c in result.trail[:3]] == [
        ("brief", 1, False),
        ("brief", 2, False),
        ("brief", 3, True),
    ]
    second, third = author.requests["brief"][1], author.requests["brief"][2]
    assert second[-2] == {"role": "assistant", "content": "I would rather not."}
    assert "no JSON object found" in second[-1]["content"]
    assert "- rules: Field required" in third[-1]["content"]


async def test_a_stage_gives_up_after_its_retries(tmp_path):
    author = ScriptedAuthor("giving-up-author", {"tools": ["{}", "{}"]})

    result = await generate_scenario(_settings(author, _world("giving-up-world"), retries=1))

    assert result.failure is not None and result.failure.stage == "tools"
    assert author.calls("tools") == 2 and author.calls("tasks") == 0
    assert result.scenario is None and not result.verified
    written = write_generation(result, tmp_path)
    assert [path.name for path in written] == ["refill-desk.review.md"]
    sheet = written[0].read_text(encoding="utf-8")
    assert "**Stopped at the tools stage**" in sheet and "No tasks were accepted." in sheet


async def test_an_initial_state_outside_its_schema_goes_back_to_the_tools_stage():
    tools = sound_part("tools")
    tools["initial_state"]["prescriptions"]["101"]["refills_left"] = "two"
    author = ScriptedAuthor("state-author", {"tools": [tools]})

    result = await generate_scenario(_settings(author, _world("state-world")))

    assert result.verified
    rejected = result.trail[1]
    assert rejected.stage == "tools" and not rejected.accepted
    assert any(
        p.startswith("initial_state") and "'two' is not of type 'integer'" in p for p in rejected.problems
    )


async def test_a_tool_given_twice_keeps_its_first_definition_and_the_sheet_names_it(tmp_path):
    tools = sound_part("tools")
    repeat = copy.deepcopy(tools["tools"][0])
    repeat["description"] = "A second, different definition under the same name."
    tools["tools"].append(repeat)
    author = ScriptedAuthor("repeat-author", {"tools": [tools]})

    result = await generate_scenario(_settings(author, _world("repeat-world")))

    assert result.verified and author.calls("tools") == 1
    assert result.scenario is not None
    [kept] = [tool for tool in result.scenario.tools if tool.name == repeat["name"]]
    assert kept.description == sound_part("tools")["tools"][0]["description"]
    assert len(result.scenario.tools) == len(sound_part("tools")["tools"])
    sheet = next(path for path in write_generation(result, tmp_path) if path.suffix == ".md")
    assert f"the tool {repeat['name']!r} was given more than once" in sheet.read_text(encoding="utf-8")


async def test_the_schemas_sent_ask_for_as_many_tasks_rubrics_and_references_as_tasks():
    # Under constrained decoding (the local model) the schema is what the answer can be: its lists are sized.
    author = ScriptedAuthor("sized-author")

    await generate_scenario(_settings(author, _world("sized-world")))

    tasks_wanted = len(sound_part("tasks")["tasks"])
    for stage in ("tasks", "rubrics", "references"):
        listed = author.schemas[stage][0]["properties"][stage]
        assert (listed["minItems"], listed["maxItems"]) == (tasks_wanted, tasks_wanted), stage
    assert "maxItems" not in author.schemas["tools"][0]["properties"]["tools"]


async def test_tasks_must_be_as_many_as_asked_and_each_id_once():
    tasks = sound_part("tasks")
    tasks["tasks"].append(copy.deepcopy(tasks["tasks"][0]))
    author = ScriptedAuthor("count-author", {"tasks": [tasks]})

    result = await generate_scenario(_settings(author, _world("count-world")))

    assert result.verified
    problems = result.trail[2].problems
    assert "tasks: 1 tasks were asked for, the answer has 2" in problems
    assert "tasks: the id 'one-refill' is used twice" in problems


async def test_three_tasks_must_cover_every_difficulty():
    tasks = sound_part("tasks")
    tasks["tasks"] = [dict(tasks["tasks"][0], id=f"refill-{n}") for n in range(3)]
    author = ScriptedAuthor("levels-author", {"tasks": [tasks]})

    result = await generate_scenario(
        _settings(author, _world("levels-world"), task_count=3, retries=0, rounds=0)
    )

    # The only answer is a valid part: it is kept, and its problem stays on the sheet.
    assert result.failure is None and not result.verified
    kept = next(call for call in result.trail if call.stage == "tasks")
    assert kept.kept and "tasks: difficulties [1]; use each of 1, 2 and 3 at least once" in kept.problems
    assert (
        "tasks: difficulties [1]; use each of 1, 2 and 3 at least once"
        in result.verifications[0].problems["tasks"]
    )


async def test_a_part_kept_with_problems_is_repaired_after_verification(tmp_path):
    tools = sound_part("tools")
    tools["initial_state"]["prescriptions"]["101"]["refills_left"] = "two"
    author = ScriptedAuthor("kept-author", {"tools": [tools, tools]})

    result = await generate_scenario(_settings(author, _world("kept-world"), retries=1))

    assert result.verified and len(result.verifications) == 2
    first, second = (call for call in result.trail if call.stage == "tools" and call.round == 0)
    assert not first.kept and second.kept
    assert [call.stage for call in result.trail[3:6]] == ["tasks", "rubrics", "references"]
    assert any("'two' is not of type 'integer'" in p for p in result.verifications[0].problems["tools"])
    assert result.verifications[0].gates is None  # an invalid scenario is not gated
    assert [(c.stage, c.round, c.accepted) for c in result.trail[6:]] == [("tools", 1, True)]
    sheet = write_generation(result, tmp_path)[1].read_text(encoding="utf-8")
    assert "| tools | 0 | 2 | kept, with problems |" in sheet


async def test_a_task_left_without_a_rubric_is_written_with_a_placeholder_plan_and_flagged(tmp_path):
    stray = sound_part("rubrics")
    stray["rubrics"][0]["task"] = "other-task"
    author = ScriptedAuthor("stray-author", {"rubrics": [stray]})

    result = await generate_scenario(_settings(author, _world("stray-world"), retries=0, rounds=0))

    assert not result.verified and result.failure is None
    scenario = result.scenario
    assert (
        scenario is not None
        and scenario.tasks[0].verification_plan == "(no rubric was written for this task)"
    )
    assert "rubrics: no entry for task 'one-refill'" in result.verifications[0].problems["rubrics"]
    yaml_path, review_path = write_generation(result, tmp_path)
    assert "(no rubric was written for this task)" in yaml_path.read_text(encoding="utf-8")
    assert "**Not verified**" in review_path.read_text(encoding="utf-8")


async def test_a_rubric_must_cover_each_task_and_have_a_critical_item():
    stray = sound_part("rubrics")
    stray["rubrics"][0]["task"] = "other-task"
    uncritical = sound_part("rubrics")
    uncritical["rubrics"][0]["rubric"]["items"][0]["critical"] = False
    author = ScriptedAuthor("rubric-author", {"rubrics": [stray, uncritical]})

    result = await generate_scenario(_settings(author, _world("rubric-world")))

    assert result.verified
    first, second = (call for call in result.trail if call.stage == "rubrics" and not call.accepted)
    assert "rubrics: no entry for task 'one-refill'" in first.problems
    assert "rubrics: task 'other-task' is not one of ['one-refill']" in first.problems
    assert any("has no critical item" in p for p in second.problems)


async def test_an_item_already_true_at_the_start_is_refused_by_the_rubric_audit():
    rubrics = sound_part("rubrics")
    rubrics["rubrics"][0]["rubric"]["items"][1]["guard"] = False
    author = ScriptedAuthor("audit-author", {"rubrics": [rubrics]})

    result = await generate_scenario(_settings(author, _world("audit-world")))

    assert result.verified
    rejected = next(call for call in result.trail if call.stage == "rubrics")
    assert any("'empty-kept' is already true in the task's initial state" in p for p in rejected.problems)


async def test_a_failed_gate_goes_back_to_the_rubrics_stage():
    # Reading the prescription is all this rubric asks for: the reads-only baseline passes it.
    lenient = sound_part("rubrics")
    lenient["rubrics"][0]["rubric"]["items"] = [
        {
            "id": "read",
            "kind": "tool_call",
            "critical": True,
            "description": "The prescription was read.",
            "checks": [{"tool": "get_prescription"}],
        }
    ]
    author = ScriptedAuthor("gate-author", {"rubrics": [lenient]})

    result = await generate_scenario(_settings(author, _world("gate-world")))

    assert result.verified and len(result.verifications) == 2
    first = result.verifications[0]
    assert first.simcheck is None and first.gates is not None and not first.gates.ok
    assert any("gate no-baseline-passes" in p for p in first.problems["rubrics"])
    assert [(c.stage, c.round) for c in result.trail[5:]] == [("rubrics", 1)]
    repair = author.last_prompt("rubrics")
    assert "found these problems in your earlier answer" in repair and "no-baseline-passes" in repair
    assert '"id":"read"' in repair  # the earlier answer, to correct


async def test_a_reference_the_world_model_simulates_otherwise_goes_back_to_the_references_stage():
    author = ScriptedAuthor("simcheck-author")

    result = await generate_scenario(_settings(author, _world("simcheck-world", wrong_answers=1)))

    assert result.verified and len(result.verifications) == 2
    first = result.verifications[0]
    assert first.faithful_rate == 0.5
    assert first.problems["references"] and list(first.problems) == ["references"]
    assert "reference_solution[0] (get_prescription)" in first.problems["references"][0]
    assert "values differ" in first.problems["references"][0]
    assert author.calls("references") == 2
    assert "the world model, given the rules and the state, answered otherwise" in author.last_prompt(
        "references"
    )


async def test_problems_left_after_the_last_round_are_on_the_sheet(tmp_path):
    author = ScriptedAuthor("stubborn-author")

    result = await generate_scenario(_settings(author, _world("stubborn-world", wrong_answers=10), rounds=1))

    assert not result.verified and result.failure is None
    assert len(result.verifications) == 2 and author.calls("references") == 2
    yaml_path, review_path = write_generation(result, tmp_path)
    assert "it did NOT pass verification" in yaml_path.read_text(encoding="utf-8")
    sheet = review_path.read_text(encoding="utf-8")
    assert "**Not verified**" in sheet and "Steps the world model simulated otherwise:" in sheet


async def test_a_lower_faithful_share_accepts_a_partly_unfaithful_simulation():
    result = await generate_scenario(
        _settings(
            ScriptedAuthor("lenient-author"), _world("lenient-world", wrong_answers=1), min_faithful=0.5
        )
    )

    assert result.verified and len(result.verifications) == 1


def test_drafts_are_never_written_into_the_bundled_catalog():
    with pytest.raises(GenerationOutputError, match="inside the bundled catalog"):
        write_generation(None, BUNDLED_CATALOG / "healthcare-life-sciences")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("location", "stage"),
    [
        ("", "brief"),
        ("id", "brief"),
        ("rules", "brief"),
        ("tools[1].input_schema", "tools"),
        ("initial_state.prescriptions", "tools"),
        ("state_schema", "tools"),
        ("state_descriptions", "tools"),
        ("tasks[0].instruction", "tasks"),
        ("tasks[2].initial_state_patch", "tasks"),
        ("tasks[0]", "tasks"),
        ("tasks[1].rubric.items[0].checks[0].pointer", "rubrics"),
        ("tasks[0].reference_solution[3].observation", "references"),
    ],
)
def test_each_place_of_a_scenario_file_has_one_owning_stage(location, stage):
    assert owning_stage(location) == stage


def test_the_output_folder_check_allows_a_folder_beside_the_catalog(tmp_path):
    from occusim.clients._generate_output import check_output_folder

    check_output_folder(tmp_path / "drafts")
    check_output_folder(Path(BUNDLED_CATALOG).parent / "catalog-drafts")


async def test_an_author_model_that_does_not_answer_stops_the_stage_it_was_asked_for(tmp_path):
    author = ScriptedAuthor("silent-author")
    author.model = "scripted/nobody-registered-this"

    result = await generate_scenario(_settings(author, _world("silent-world")))

    assert result.failure is not None and result.failure.stage == "brief"
    assert "the author model did not answer" in result.failure.problems[0]
    assert "no scripted model named 'nobody-registered-this'" in result.failure.problems[0]
    assert "**Stopped at the brief stage**" in write_generation(result, tmp_path)[0].read_text(
        encoding="utf-8"
    )


async def test_a_world_model_that_answers_no_step_leaves_the_draft_unverified_without_repairs(tmp_path):
    author = ScriptedAuthor("unheard-author")

    result = await generate_scenario(_settings(author, "scripted/no-world-registered"))

    assert not result.verified and len(result.verifications) == 1
    error = result.verifications[0].simcheck_error
    assert error is not None and "gave no valid answer to any step of simcheck" in error
    assert len(result.trail) == 5  # no stage is asked to repair what the world model's setting explains
    sheet = write_generation(result, tmp_path)[1].read_text(encoding="utf-8")
    assert "Not measured: the world model scripted/no-world-registered gave no valid answer" in sheet
