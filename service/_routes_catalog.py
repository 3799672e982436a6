"""Read-only routes: the tasks and scenarios the service can run, and its health."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from occusim import __version__
from occusim.rest import JsonBodyRoute, error_responses

from ._api_models import Health, ScenarioList, ScenarioSummary, TaskList, TaskSummary
from ._health import dependencies
from ._http_api import Hosted


def catalog_router(hosted: Hosted) -> APIRouter:
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
    router = APIRouter(route_class=JsonBodyRoute)
    with_api_key = [Depends(hosted.tenant_dependency())]

    @router.get("/healthz", summary="Liveness, what this process serves and whether it reaches its store and Redis",
                tags=["service"], responses={503: {"model": Health, "description": "A dependency is unavailable."}})
    async def health(response: Response) -> Health:
        reached = await dependencies(hosted.service.store, hosted.limits.counters,
                                     shared_counters=hosted.settings.redis is not None)
        answer = Health(version=__version__, tasks=len(catalog.tasks), open_endpoints=len(hosted.endpoints),
                        dependencies=reached, status="ok" if set(reached.values()) == {"ok"} else "unavailable")
        if answer.status != "ok":
            response.status_code = 503
            response.headers["Retry-After"] = "5"
        return answer

    @router.get("/v1/tasks", summary="Every task an episode can be created for", tags=["catalog"],
                dependencies=with_api_key, responses=error_responses(401))
    async def list_tasks() -> TaskList:
        return tasks

    @router.get("/v1/scenarios", summary="Every scenario, with its tools and tasks", tags=["catalog"],
                dependencies=with_api_key, responses=error_responses(401))
    async def list_scenarios() -> ScenarioList:
        return scenarios

    return router
