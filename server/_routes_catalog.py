"""Read-only routes: the tasks and scenarios the service can run, and its health."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from occusim import __version__

from ._api_models import Health, ScenarioList, ScenarioSummary, TaskList, TaskSummary
from ._http_api import ApiRoute, Hosted, Operation, model_response

HEALTH = Operation("GET", "/healthz", "Liveness and what this process serves", Health, auth="none", tag="service")
TASKS = Operation("GET", "/v1/tasks", "Every task an episode can be created for", TaskList, tag="catalog")
SCENARIOS = Operation("GET", "/v1/scenarios", "Every scenario, with its tools and tasks", ScenarioList,
                      tag="catalog")


def catalog_routes(hosted: Hosted) -> list[ApiRoute]:
    catalog = hosted.catalog
    tasks = TaskList(tasks=[
        TaskSummary(
            id=task.id, scenario=scenario.id, category=scenario.category, title=task.title,
            difficulty=task.difficulty, max_steps=task.max_steps,
        )
        for task in catalog.tasks.values()
        for scenario in [catalog.scenario_of(task)]
    ])
    scenarios = ScenarioList(scenarios=[
        ScenarioSummary(
            id=scenario.id, name=scenario.name, category=scenario.category, domain=scenario.domain,
            occupation=scenario.occupation, summary=scenario.summary, tools=[tool.name for tool in scenario.tools],
            tasks=[task.id for task in scenario.tasks],
        )
        for scenario in catalog.scenarios.values()
    ])

    async def health(request: Request) -> Response:
        return model_response(Health(version=__version__, tasks=len(catalog.tasks), open_endpoints=len(hosted.endpoints)))

    async def list_tasks(request: Request) -> Response:
        hosted.tenant(request)
        return model_response(tasks)

    async def list_scenarios(request: Request) -> Response:
        hosted.tenant(request)
        return model_response(scenarios)

    return [ApiRoute(HEALTH, health), ApiRoute(TASKS, list_tasks), ApiRoute(SCENARIOS, list_scenarios)]
