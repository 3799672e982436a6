"""State collections: declarations read and checked against the initial state by `occusim validate`, inferred
only where the state is certain, and declared for every bundled scenario that has records."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from occusim.environments import (
    Collection,
    collection_problems,
    collection_records,
    evaluate_formula,
    infer_collections,
    load_catalog,
    load_occubench,
    load_scenario_file,
    validate_scenario,
)

STATE: dict[str, Any] = {
    "vendors": {"V-1": {"vendor_id": "V-1", "name": "Northwind"}, "V-2": {"vendor_id": "V-2", "name": "Acme"}},
    "items": {"SKU-9": {"sku": "SKU-9", "supplier": "V-1", "qty": 2, "unit_price": 4.5, "total": 9.0}},
    "accounts": {"U-1": {"A-1": {"account_id": "A-1", "system": "erp"}},
                 "U-2": {"A-2": {"account_id": "A-2", "system": "crm"}}},
    "orders": [{"order_id": "O-1", "vendor_id": "V-2"}, {"order_id": "O-2", "vendor_id": "V-1"}],
    "log": [{"vendor_id": "V-1", "at": "2025-01-01"}, {"vendor_id": "V-2", "at": "2025-01-02"}],
    "office": {"name": "HQ", "city": "Leeds"},
}


def test_inference_reads_mappings_nested_mappings_and_lists_with_their_references():
    found = {c.path: c for c in infer_collections(STATE)}
    assert set(found) == {"/vendors", "/items", "/accounts/*", "/orders"}
    assert found["/vendors"].key == "vendor_id" and found["/items"].key == "sku"
    assert found["/accounts/*"].key == "account_id"
    assert found["/orders"].key == "order_id" and found["/orders"].references == {"vendor_id": "/vendors"}
    assert all(c.inferred for c in found.values())


def test_a_log_whose_ids_happen_to_be_unique_is_not_a_collection():
    # /log's vendor_id is unique in two entries, yet it refers to vendors: the field does not name the log.
    assert "/log" not in {c.path for c in infer_collections(STATE)}


def test_records_are_read_by_collection_whatever_the_key_is_named():
    items = Collection(path="/items", key="sku")
    assert [(r.path, r.identity) for r in collection_records(items, STATE)] == [("/items/SKU-9", "SKU-9")]
    accounts = Collection(path="/accounts/*")
    assert [r.identity for r in collection_records(accounts, STATE)] == ["A-1", "A-2"]


@pytest.mark.parametrize(("collection", "message"), [
    (Collection(path="/suppliers"), "/suppliers names no mapping or list"),
    (Collection(path="/vendors", key="name"), "is filed under 'V-1' but its name is 'Northwind'"),
    (Collection(path="/orders"), "is a list, so its records need a `key` field"),
    (Collection(path="/log", key="missing_id"), "has no string or number 'missing_id'"),
    (Collection(path="/accounts/*", key="account_id"), None),
])
def test_declarations_the_state_contradicts_are_reported(collection, message):
    problems = [text for _, text in collection_problems([collection], STATE)]
    if message is None:
        assert problems == []
    else:
        assert any(message in text for text in problems), problems


def test_duplicate_identities_dangling_references_and_wrong_derived_values_are_reported():
    state = {"a": [{"id": "X"}, {"id": "X"}], "b": {"B-1": {"a_id": "Y", "qty": 2, "price": 3, "total": 7}}}
    collections = [
        Collection(path="/a", key="id"),
        Collection(path="/b", references={"a_id": "/a", "c_id": "/c"},
                   derived=[{"field": "total", "formula": "qty * price"}]),
    ]
    problems = {(tuple(at), text) for at, text in collection_problems(collections, state)}
    texts = " | ".join(text for _, text in problems)
    assert "share the identity 'X'" in texts
    assert "/b/B-1/a_id is 'Y', which names no record of /a" in texts
    assert "/b/B-1/total is 7, but qty * price gives 6" in texts
    assert ((1, "references", "a_id"), "/b/B-1/a_id is 'Y', which names no record of /a") in problems


def test_formulas_are_plain_arithmetic_and_anything_else_is_refused():
    assert evaluate_formula("round(qty * unit_price * 1.1, 2)", {"qty": 3, "unit_price": 2.5}) == 8.25
    assert evaluate_formula("max(a, b) - -c / 2", {"a": 1, "b": 4, "c": 2}) == 5.0
    assert evaluate_formula("qty * price", {"qty": 2}) is None
    assert evaluate_formula("qty / zero", {"qty": 2, "zero": 0}) is None
    for bad in ("__import__('os')", "qty.real", "qty if qty else 1", "'a' * 3", "qty **"):
        with pytest.raises(ValidationError, match="formula"):
            Collection(path="/a", derived=[{"field": "f", "formula": bad}])


@given(st.text(max_size=40))
def test_any_formula_text_is_either_refused_or_evaluates_without_raising(text):
    try:
        Collection(path="/a", derived=[{"field": "f", "formula": text}])
    except ValidationError:
        return
    value = evaluate_formula(text, {"a": 1.5, "b": -2})
    assert value is None or isinstance(value, float)


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                     max_leaves=12)


@given(st.dictionaries(st.text(min_size=1, max_size=4), _JSON, max_size=4))
@example({"0": {"": {"": {"": None}}, "b": 1}})  # an empty key: no collection path may end in an empty segment
@example({"a": [{"": {"x": {"y": 1}}}, {"": {"z": {"y": 2}}}]})
def test_inference_and_checks_never_raise_and_inferred_declarations_hold(state):
    collections = infer_collections(state)
    assert list(collection_problems(collections, state)) == []


def test_validate_reports_a_declaration_the_initial_state_contradicts(tmp_path):
    catalog = load_catalog()
    scenario = catalog.scenarios["triage-nurse"]
    data = scenario.model_dump(mode="json", exclude_none=True)
    data["tasks"] = []
    data["collections"] = [{"path": "/patients", "key": "mrn"}, {"path": "/beds", "references": {"patient_id": "/wards"}}]
    path = tmp_path / "triage.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    errors = [str(e) for e in validate_scenario(load_scenario_file(path), str(path))]
    assert any("collections[0].key" in e and "has no string or number 'mrn'" in e for e in errors), errors
    assert any("collections[1].references.patient_id" in e and "/wards is not a declared collection" in e
               for e in errors), errors


def test_every_bundled_scenario_with_records_declares_them_and_the_declarations_hold():
    catalog = load_catalog()
    for scenario in catalog.scenarios.values():
        assert not any(c.inferred for c in scenario.collections)
        assert list(collection_problems(scenario.collections, scenario.initial_state)) == []
        if infer_collections(scenario.initial_state):
            assert scenario.collections, scenario.id


def test_collections_inside_records_are_inferred_across_them():
    state = {"campaigns": {"C-1": {"campaign_id": "C-1", "items": {"I-1": {"item_id": "I-1", "decision": None}}},
                           "C-2": {"campaign_id": "C-2", "items": {"I-2": {"item_id": "I-2", "decision": "keep"}}}},
             "cases": {"K-1": {"case_id": "K-1", "members": [{"member_id": "M-1"}, {"member_id": "M-2"}]}}}
    found = {c.path: c.key for c in infer_collections(state)}
    assert found == {"/campaigns": "campaign_id", "/campaigns/*/items": "item_id", "/cases": "case_id",
                     "/cases/*/members": "member_id"}
    items = next(c for c in infer_collections(state) if c.path == "/campaigns/*/items")
    assert [r.path for r in collection_records(items, state)] == ["/campaigns/C-1/items/I-1", "/campaigns/C-2/items/I-2"]


def test_the_importer_marks_its_collections_inferred(occubench_sample):
    scenarios = [scenario for scenario, _ in load_occubench(occubench_sample.root)]
    declared = [c for scenario in scenarios for c in scenario.collections]
    assert declared and all(c.inferred for c in declared)
    for scenario in scenarios:
        assert list(collection_problems(scenario.collections, scenario.initial_state)) == []


def test_a_field_named_star_is_not_inferred_as_a_collection_path():
    # `*` in a collection path means any key: a literal field so named would address its siblings too.
    state = {"0": [], "*": {"": {"": None}}}
    collections = infer_collections(state)
    assert all("*" not in c.path for c in collections)
    assert list(collection_problems(collections, state)) == []
