"""Which task selectors can pick a bundled task, told from the catalog's file layout without parsing it."""

from __future__ import annotations

import pytest

from occusim.environments import BUNDLED_CATALOG, bundled_may_match, category_slug, load_catalog


def test_the_file_layout_names_every_bundled_scenario_and_category():
    # bundled_may_match reads ids from file and folder names: they must be what the files declare.
    catalog = load_catalog()
    stems = {path.stem for path in BUNDLED_CATALOG.rglob("*.yaml")}
    folders = {path.name for path in BUNDLED_CATALOG.iterdir() if path.is_dir()}
    for task in catalog.tasks.values():
        scenario = catalog.scenario_of(task)
        assert scenario.id in stems and category_slug(scenario.category) in folders
        assert task.id.startswith(scenario.id + "/")


@pytest.mark.parametrize("selector", [None, "", "all", "*", "occu*", "*/july-cbod-dmr", "technology-it",
                                      "discharge-compliance-officer/*", "occubench/*,discharge-compliance-officer",
                                      "[o]ccubench/*"])
def test_a_selector_that_may_pick_a_bundled_task_loads_the_catalog(selector):
    assert bundled_may_match(selector)


@pytest.mark.parametrize("selector", ["occubench/*", "occubench/11,occubench/151", "mine/triage-*"])
def test_a_selector_of_other_sources_only_does_not(selector):
    assert not bundled_may_match(selector)
    assert not [task for task in load_catalog().select(selector)]
