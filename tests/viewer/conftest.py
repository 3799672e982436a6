"""The viewer's tests' client: the local viewer app over the test run folder and its real store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from occusim.analysis import RunDir
from occusim.clients import RunEpisodes
from occusim.server import Store
from occusim.viewer import viewer_app
from tests.helpers import write_viewed_run


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx2.AsyncClient]:
    run = await write_viewed_run(tmp_path / "run")
    store = Store(run.db)
    await store.init()
    app = viewer_app(RunEpisodes(RunDir(run.folder), store))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        yield http
    await store.close()
