"""An episode's tool list is built once per scenario and never outlives it or goes stale."""

from __future__ import annotations

import copy
import gc

from occusim.environments import Scenario
from occusim.server._mcp_server import _TOOLS, scenario_tools
from tests.helpers import TRIAGE


def test_episodes_of_one_scenario_share_its_tool_list_and_each_protocol_form_is_its_own():
    scenario = Scenario.model_validate(TRIAGE)
    listed = scenario_tools(scenario)
    assert scenario_tools(scenario) is listed
    bare = scenario_tools(scenario, output_schemas=False)
    assert bare is not listed
    assert [tool.output_schema for tool in bare] == [None] * len(bare)
    assert listed[1].output_schema is not None


def test_another_scenario_gets_its_own_list_and_a_dropped_scenario_takes_its_list_with_it():
    changed = copy.deepcopy(TRIAGE)
    changed["tools"][1]["description"] = "Read one patient's chart."
    first, second = Scenario.model_validate(TRIAGE), Scenario.model_validate(changed)
    assert scenario_tools(first)[1].description == "Read one patient's record."
    assert scenario_tools(second)[1].description == "Read one patient's chart."
    keys = {(id(first), True), (id(second), True)}
    assert keys <= _TOOLS.keys()
    del first, second
    gc.collect()
    assert not keys & _TOOLS.keys()
