"""The run's HTML report served by the viewer at /report: its links open the viewer's pages, which link back."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urljoin

import httpx2
import pytest

from occusim.analysis import RunDir
from occusim.analysis._report import VIEWER_URL
from occusim.clients import RunEpisodes
from occusim.clients.cli import main
from occusim.clients.cli.view import DEFAULT_PORT, REPORT_FILE
from occusim.server import Store
from occusim.viewer import viewer_app
from tests.helpers import write_viewed_run


async def _client_for(folder: Path, store: Store) -> httpx2.AsyncClient:
    app = viewer_app(RunEpisodes(RunDir(folder), store), report=folder / REPORT_FILE)
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1")


async def test_report_links_open_the_viewer_pages_and_they_link_back(tmp_path: Path):
    run = await write_viewed_run(tmp_path / "run")
    store = Store(run.db)
    await store.init()
    try:
        async with await _client_for(run.folder, store) as http:
            before = await http.get("/")
            assert 'class="report"' not in before.text  # no report written yet: no link to one
            assert (await http.get("/report")).status_code == 404

            assert main(["report", str(run.folder), "--format", "html", "--out", str(run.folder / REPORT_FILE)]) == 0

            report = await http.get("/report")
            assert report.status_code == 200 and report.text.startswith("<!DOCTYPE html>")
            assert "script-src" not in report.headers["content-security-policy"]  # the report runs no script
            hrefs = re.findall(r'href="([^"]*)"', report.text)
            episodes = [href for href in hrefs if href.startswith("episodes/")]
            listed = [row.episode_id for row in RunDir(run.folder).latest_rows() if row.episode_id is not None]
            assert len(episodes) == len(listed) >= 2
            for href in hrefs:
                page = await http.get(urljoin(str(report.url), href))
                assert page.status_code == 200, href
                assert '<a class="report" href="/report">' in page.text  # every viewer page links back
            for episode_id in listed:
                page = await http.get(urljoin(str(report.url), f"episodes/{episode_id}"))
                assert f"<code>{episode_id}</code>" in page.text
    finally:
        await store.close()


async def test_markdown_links_to_the_address_occusim_view_listens_on_by_default(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    run = await write_viewed_run(tmp_path / "run")

    assert main(["report", str(run.folder)]) == 0

    text = capsys.readouterr().out
    assert VIEWER_URL == f"http://127.0.0.1:{DEFAULT_PORT}/"
    assert f"- **Viewer:** [{VIEWER_URL}]({VIEWER_URL})" in text
    rows = RunDir(run.folder).latest_rows()
    assert any(row.episode_id is None for row in rows)
    for row in rows:
        if row.episode_id is None:
            assert f"| {row.task_id} | {row.fault_mode} | {row.trial} | infra error | - | never started |" in text
        else:
            assert f"[{row.episode_id}]({VIEWER_URL}episodes/{row.episode_id}) |" in text
