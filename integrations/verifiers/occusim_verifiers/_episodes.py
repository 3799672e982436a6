"""occusim's episode API over HTTP: the task list, creating an episode, its status, submitting and the verdict."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Any

import httpx

# How often a submitted episode's status is read while its verdict is being computed.
_POLL_SECONDS = 0.2


class EpisodeApiError(RuntimeError):
    """The episode API refused a request or could not be reached; the message says which and why."""


def api_headers(api_key_var: str) -> dict[str, str]:
    """The bearer header from the variable named `api_key_var`; none when it is unset (a --no-auth service)."""
    key = os.environ.get(api_key_var)
    return {"Authorization": f"Bearer {key}"} if key else {}


def _checked(response: httpx.Response, what: str) -> Any:
    if response.is_success:
        return response.json()
    try:
        detail = response.json().get("error", {}).get("message") or response.text
    except ValueError:
        detail = response.text
    raise EpisodeApiError(
        f"{what}: {response.request.method} {response.request.url} answered {response.status_code}: {detail}"
    )


def list_tasks(url: str, headers: dict[str, str], timeout: float) -> list[dict[str, Any]]:
    """GET /v1/tasks: every task the service can open an episode of."""
    try:
        response = httpx.get(f"{url}/v1/tasks", headers=headers, timeout=timeout)
    except httpx.HTTPError as error:
        raise EpisodeApiError(f"cannot list the tasks of {url}: {error}") from error
    tasks: list[dict[str, Any]] = _checked(response, "listing tasks")["tasks"]
    return tasks


@dataclass(frozen=True)
class OpenedEpisode:
    episode_id: str
    mcp_url: str
    token: str


class EpisodeApi:
    """One service's episode routes, for one rollout."""

    def __init__(self, url: str, headers: dict[str, str], timeout: float) -> None:
        self.url = url.rstrip("/")
        self.headers = headers
        self.timeout = timeout

    async def _request(self, method: str, path: str, what: str, body: dict[str, Any] | None = None) -> Any:
        try:
            async with httpx.AsyncClient(headers=self.headers, timeout=self.timeout) as http:
                response = await http.request(method, f"{self.url}{path}", json=body)
        except httpx.HTTPError as error:
            raise EpisodeApiError(f"{what}: {self.url}{path} could not be reached: {error}") from error
        return _checked(response, what)

    async def open(self, body: dict[str, Any]) -> OpenedEpisode:
        created = await self._request(
            "POST", "/v1/episodes", f"opening an episode of {body['task_id']}", body
        )
        return OpenedEpisode(created["episode_id"], created["mcp_url"], created["token"])

    async def status(self, episode_id: str) -> dict[str, Any]:
        found: dict[str, Any] = await self._request(
            "GET", f"/v1/episodes/{episode_id}", f"reading episode {episode_id}"
        )
        return found

    async def submit(self, episode_id: str, answer: str) -> dict[str, Any]:
        submitted: dict[str, Any] = await self._request(
            "POST",
            f"/v1/episodes/{episode_id}/submit",
            f"submitting episode {episode_id}",
            {"answer": answer},
        )
        return submitted

    async def verdict(self, episode_id: str, within: float) -> dict[str, Any]:
        """The episode's status once its verdict is stored, or as it stands after `within` seconds."""
        deadline = time.monotonic() + within
        while True:
            status = await self.status(episode_id)
            if status.get("verdict") is not None or time.monotonic() >= deadline:
                return status
            await asyncio.sleep(_POLL_SECONDS)
