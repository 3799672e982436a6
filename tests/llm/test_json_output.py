"""parse_json_output tolerates fences and prose and reports garbage with an excerpt."""

from __future__ import annotations

import pytest

from occusim.llm import LLMOutputError, parse_json_output


def test_plain_json():
    assert parse_json_output('  {"a": 1, "b": [1, 2]}\n') == {"a": 1, "b": [1, 2]}


def test_fenced_json():
    text = 'Sure.\n```json\n{"state": {"beds": 3}}\n```\nAnything else?'
    assert parse_json_output(text) == {"state": {"beds": 3}}


def test_bare_fence():
    assert parse_json_output('```\n{"ok": true}\n```') == {"ok": True}


def test_prose_wrapped_object():
    text = 'The observation is {"status": "delayed", "eta": "14:05"} as requested.'
    assert parse_json_output(text) == {"status": "delayed", "eta": "14:05"}


def test_stray_brace_in_prose_is_skipped():
    text = 'Use {curly} notation; result: {"ok": 1}'
    assert parse_json_output(text) == {"ok": 1}


def test_object_preferred_over_leading_bracket_prose():
    assert parse_json_output('[note] result {"ok": 1}') == {"ok": 1}


def test_top_level_array():
    assert parse_json_output("results: [1, 2, 3]") == [1, 2, 3]


@pytest.mark.parametrize("garbage", ["", "no json here", "{broken: json,", "```json\n{oops\n```"])
def test_garbage_raises_with_excerpt(garbage):
    with pytest.raises(LLMOutputError, match="expected a JSON object") as caught:
        parse_json_output(garbage)
    assert caught.value.text == garbage


def test_long_output_excerpt_is_truncated():
    text = "x" * 5000
    with pytest.raises(LLMOutputError) as caught:
        parse_json_output(text)
    assert len(str(caught.value)) < 400
