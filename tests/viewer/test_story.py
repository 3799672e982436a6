"""An episode page tells the story: the instruction, the three models, the outcome, faults met of planned, the
agent's messages between its calls, each step's patch or "no change", and the final state against the initial
one; the index gives the agent model, the date, "m of n" faults met and a summary of the run."""

from __future__ import annotations

import re

from occusim.environments import StepRecord
from occusim.viewer._conversation import conversation
from tests.helpers import (
    AGENT_THOUGHT,
    CLEAN,
    FAULTED,
    HOSTILE_ID,
    SYSTEM_PROMPT,
    TASK_TEXT,
)


def summary_of(page: str) -> str:
    return page[page.index('<section class="story"'):page.index("</section>")]


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


async def test_the_summary_at_the_top_gives_instruction_models_outcome_faults_and_cost(client):
    page = (await client.get(f"/episodes/{FAULTED}")).text
    summary = text(summary_of(page))

    assert page.index('class="story"') < page.index("<h2>Timeline</h2>")
    assert TASK_TEXT in summary
    assert "Agent model agent-x" in summary and "World model world-y (tracked mode)" in summary
    assert "Judge model judge-z" in summary
    assert "failed score 0.500" in summary
    assert "E2: 1 of 2 planned fault(s) met" in summary and "drop_fields" in summary
    assert "Simulator flags none" in summary
    # The run row prices no role here: the page says so instead of showing a made-up figure.
    assert "Cost $0.0000 and not priced: agent, world model" in summary


async def test_a_mode_whose_faults_were_not_met_does_not_read_as_met(client):
    page = (await client.get(f"/episodes/{HOSTILE_ID}")).text

    assert "E2: 1 of 2 planned fault(s) met" in text(summary_of(page))
    clean = text(summary_of((await client.get(f"/episodes/{CLEAN}")).text))
    assert "E0: no fault planned by the server" in clean and "count 2" not in clean


async def test_the_timeline_carries_the_agents_messages_and_each_steps_patch_or_no_change(client):
    page = (await client.get(f"/episodes/{CLEAN}")).text
    timeline = page[page.index("<h2>Timeline</h2>"):page.index("<h2>Final state</h2>")]

    assert SYSTEM_PROMPT in timeline
    # What the agent said stands just before the call it led to (step 1), and its closing words at the end.
    thought, step_0, step_1 = (timeline.index(AGENT_THOUGHT), timeline.index('id="step-0"'),
                               timeline.index('id="step-1"'))
    assert step_0 < thought < step_1
    assert timeline.index("Done: Refunded $89.99") > step_1
    step_0_html = timeline[step_0:thought]
    assert "No change to the state." in step_0_html and "State patch" not in step_0_html
    assert "State patch" in timeline[step_1:]


async def test_the_final_state_is_shown_with_what_changed(client):
    page = (await client.get(f"/episodes/{CLEAN}")).text
    final = page[page.index("<h2>Final state</h2>"):page.index("<h2>Final answer</h2>")]

    assert 'class="diff state-diff"' in final
    changed = re.search(r'<tr><td class="changed">(.*?)</td><td class="changed">(.*?)</td></tr>', final)
    assert changed is not None and "<mark>" in changed.group(1)
    assert [re.sub(r"<[^>]+>", "", cell) for cell in changed.groups()] == [
        "      &#34;status&#34;: &#34;open&#34;,", "      &#34;status&#34;: &#34;closed&#34;,"]


async def test_episodes_link_to_their_neighbours_and_votes_are_explained(client):
    first = (await client.get(f"/episodes/{CLEAN}")).text
    middle = (await client.get(f"/episodes/{FAULTED}")).text

    assert 'rel="prev"' not in first and f'rel="next" href="/episodes/{FAULTED}"' in first
    assert f'rel="prev" href="/episodes/{CLEAN}"' in middle and f'rel="next" href="/episodes/{HOSTILE_ID}"' in middle
    assert "<caption>Each vote is a separate request to the judge" in middle and "Position" not in middle


async def test_the_index_gives_agent_date_faults_met_and_a_run_summary(client):
    page = (await client.get("/")).text
    rows = re.findall(r'<tr class="episode">(.*?)</tr>', page, re.S)

    assert "4 episode(s): 1 passed, 2 failed, 1 infrastructure error(s), not counted against the agent; pass rate " \
           "33% of the judged." in page
    assert "<th>Agent model</th>" in page and "<th>Date</th>" in page
    first = text(rows[0])
    assert re.search(r"\b2026-\d\d-\d\d \d\d:\d\d\b", first)
    assert "agent-x" in first
    met = [re.search(r'class="faults-met"[^>]*>([^<]*)<', row).group(1) for row in rows]
    assert met == ["0 of 0", "1 of 2", "1 of 2", "-"]  # the last never ran


def test_messages_are_placed_before_the_step_their_call_became():
    steps = [StepRecord(index=index, tool=tool, arguments={}, observation={})
             for index, tool in enumerate(["lookup", "lookup", "close"])]

    def call(name: str) -> dict:
        return {"id": name, "type": "function", "function": {"name": name, "arguments": "{}"}}

    messages = [
        {"role": "system", "content": "be careful"}, {"role": "user", "content": "the task"},
        {"role": "assistant", "content": "first look", "tool_calls": [call("lookup")]},
        {"role": "tool", "tool_call_id": "lookup", "content": "{}"},
        {"role": "assistant", "content": [{"type": "text", "text": "again"}], "tool_calls": [call("no_such_tool")]},
        {"role": "user", "content": "use a tool"},
        {"role": "assistant", "content": None, "tool_calls": [call("lookup"), call("close")]},
        {"role": "assistant", "content": "done"},
    ]

    found = conversation(messages, steps)

    assert [said.text for said in found.opening] == ["be careful", "the task"] and found.task_text == "the task"
    assert {index: [said.text for said in said_list] for index, said_list in found.before_step.items()} == {
        0: ["first look"], 1: ["again", "use a tool"]}
    assert [said.text for said in found.closing] == ["done"]
