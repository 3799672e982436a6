"""The shown observation beside the true one: which lines and characters differ."""

from __future__ import annotations

from occusim.viewer import side_by_side


def _text(cell) -> str:
    return "".join(segment.text for segment in cell.segments)


def _marked(cell) -> str:
    return "".join(segment.text for segment in cell.segments if segment.marked)


def test_a_dropped_field_is_a_line_only_the_truth_has():
    rows = side_by_side({"status": "open", "merchant": "Acme"}, {"status": "open", "amount": 89.99, "merchant": "Acme"})

    changed = [row for row in rows if row.shown.kind != "same"]
    assert len(changed) == 1
    assert changed[0].shown.kind == "blank" and changed[0].true.kind == "added"
    assert _marked(changed[0].true).strip() == '"amount": 89.99,'
    assert [row.shown.kind for row in rows].count("same") == 4  # braces, status, merchant


def test_a_changed_value_marks_only_the_characters_that_differ():
    rows = side_by_side({"items": [1, 2], "total": 1250}, {"items": [1, 2], "total": 1350})

    (row,) = [row for row in rows if row.shown.kind == "changed"]
    assert _text(row.shown).strip() == '"total": 1250' and _text(row.true).strip() == '"total": 1350'
    assert _marked(row.shown) == "2" and _marked(row.true) == "3"


def test_a_truncated_list_shows_the_lines_the_agent_did_not_see():
    rows = side_by_side({"rows": [1]}, {"rows": [1, 2, 3]})

    assert [_marked(row.true).strip() for row in rows if row.true.kind == "added"] == ["2,", "3"]
    assert all(row.shown.kind in ("same", "blank", "changed") for row in rows)


def test_an_error_string_against_an_object_is_shown_whole():
    rows = side_by_side('{"error": {"type": "http_500"}}', {"ok": True})

    assert any(row.shown.kind != "same" for row in rows)
    assert "http_500" in "".join(_text(row.shown) for row in rows)  # a JSON string is shown parsed
    assert "".join(_text(row.true) for row in rows).replace(" ", "").replace("\n", "") == '{"ok":true}'
