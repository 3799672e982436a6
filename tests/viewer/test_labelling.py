"""Labelling mode over a real run folder and store: the form on each episode, saving through the POST route,
what is refused (stale or foreign forms, cross-site requests, unknown items), and the file kept whole."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from urllib.parse import urlencode

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from occusim.analysis import RunDir
from occusim.clients import RunEpisodes
from occusim.judge import ItemVerdict, Verdict, read_review_labels
from occusim.server import Store
from occusim.viewer import EpisodeDetail, EpisodeEntry, LabelDesk, append_lines, viewer_app, viewer_routes
from tests.helpers import CLEAN, FAULTED, HOSTILE_ID, write_viewed_run

FORM = {"content-type": "application/x-www-form-urlencoded"}


@pytest.fixture
async def labelling(tmp_path: Path):
    run = await write_viewed_run(tmp_path / "run")
    store = Store(run.db)
    await store.init()
    desk = LabelDesk.beside_run(run.folder, "alice")
    app = viewer_app(RunEpisodes(RunDir(run.folder), store), labels=desk)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        yield http, desk
    await store.close()


def _token(page: str) -> str:
    found = re.search(r'name="token" value="([^"]+)"', page)
    assert found is not None
    return found.group(1)


async def _post(http: httpx2.AsyncClient, episode: str, fields: dict[str, str], **headers: str) -> httpx2.Response:
    return await http.post(f"/labels/{episode}", content=urlencode(fields), headers=FORM | headers)


async def test_the_form_lists_every_item_and_saving_appends_the_changed_labels(labelling):
    http, desk = labelling
    page = (await http.get(f"/episodes/{FAULTED}")).text
    assert 'action="/labels/ep-fault-0002"' in page and "Labelling as <b>alice</b>" in page
    assert re.findall(r'name="verdict-([^"]+)" value="pass"', page) == ["state-closed", "answer"]
    token = _token(page)

    answer = await _post(http, FAULTED, {"token": token, "verdict-state-closed": "pass", "note-state-closed": "",
                                         "verdict-answer": "fail", "note-answer": "the amount\r\nis missing"})
    assert answer.status_code == 303 and answer.headers["location"] == f"/episodes/{FAULTED}?saved=2#labels"
    labels = [p.label for p in read_review_labels(desk.path)]
    assert [(lab.episode_id, lab.item, lab.passed, lab.note, lab.reviewer) for lab in labels] == [
        (FAULTED, "state-closed", True, "", "alice"), (FAULTED, "answer", False, "the amount\nis missing", "alice")]
    assert labels[0].task_id == "chargeback/dispute" and labels[0].scenario_id == "chargeback"

    assert "; 1 of 3 episodes labelled)" in (await http.get("/")).text
    shown = (await http.get(f"/episodes/{FAULTED}?saved=2")).text
    assert "Saved 2 label(s)." in shown and f'href="/episodes/{HOSTILE_ID}">Next episode' in shown
    assert 'name="verdict-answer" value="fail" checked' in shown and ">the amount\nis missing</textarea>" in shown

    # The same form again changes nothing and appends nothing; a changed note appends one line.
    same = {"token": token, "verdict-state-closed": "pass", "verdict-answer": "fail",
            "note-answer": "the amount\nis missing"}
    assert (await _post(http, FAULTED, same)).headers["location"].endswith("saved=0#labels")
    assert (await _post(http, FAULTED, same | {"note-answer": "no amount"})).headers["location"].endswith("saved=1#labels")
    assert len(read_review_labels(desk.path)) == 3


async def test_labels_start_empty_and_an_unlabelled_item_is_left_out(labelling):
    http, desk = labelling
    page = (await http.get(f"/episodes/{CLEAN}")).text
    assert " checked" not in page and "Saved" not in page
    assert "; 0 of 3 episodes labelled)" in (await http.get("/")).text
    answer = await _post(http, CLEAN, {"token": _token(page), "verdict-answer": "pass"})
    assert answer.headers["location"].endswith("saved=1#labels")
    assert [p.label.item for p in read_review_labels(desk.path)] == ["answer"]


@pytest.mark.parametrize(("token", "fields", "headers", "status", "message"), [
    ("forged", {"verdict-answer": "pass"}, {}, 403, "not served by this viewer"),
    (None, {"verdict-answer": "pass"}, {}, 403, "not served by this viewer"),
    ("real", {"verdict-answer": "pass"}, {"sec-fetch-site": "cross-site"}, 403, "a cross-site request may not save"),
    ("real", {"verdict-answer": "pass"}, {"origin": "http://evil.example"}, 403, "from http://evil.example may not"),
    ("real", {"verdict-answer": "maybe"}, {}, 400, "send pass or fail"),
    ("real", {"verdict-nothing": "pass"}, {}, 400, "'verdict-nothing' names no rubric item"),
    ("real", {"note-answer": "why"}, {}, 400, "has no pass/fail"),
    ("real", {"verdict-answer": "pass", "note-answer": "x" * 4001}, {}, 400, "longer than 4000 characters"),
])
async def test_refused_submissions_save_nothing(labelling, token, fields, headers, status, message):
    http, desk = labelling
    served = _token((await http.get(f"/episodes/{CLEAN}")).text)
    body = fields if token is None else {"token": served if token == "real" else token} | fields
    answer = await _post(http, CLEAN, body, **headers)
    assert answer.status_code == status and message in answer.text
    assert answer.headers["content-security-policy"].startswith("default-src 'none'")
    assert not desk.path.exists()


async def test_other_shapes_of_request_are_refused(labelling):
    http, desk = labelling
    token = _token((await http.get(f"/episodes/{CLEAN}")).text)
    as_json = await http.post(f"/labels/{CLEAN}", json={"token": token})
    assert as_json.status_code == 415
    twice = await http.post(f"/labels/{CLEAN}", content=f"token={token}&verdict-answer=pass&verdict-answer=fail",
                            headers=FORM)
    assert twice.status_code == 400 and "given twice" in twice.text
    missing = await _post(http, "ep-none", {"token": token, "verdict-answer": "pass"})
    assert missing.status_code == 404
    huge = await http.post(f"/labels/{CLEAN}", content=b"x" * (600 * 1024), headers=FORM)
    assert huge.status_code == 413
    # Same-origin requests pass: the viewer's own origin, and `null` (the pages send no referrer).
    for origin in ("http://127.0.0.1", "null"):
        ok = await _post(http, CLEAN, {"token": token, "verdict-answer": "pass"}, origin=origin,
                         **{"sec-fetch-site": "same-origin"})
        assert ok.status_code == 303
    assert len(read_review_labels(desk.path)) == 1


async def test_without_labelling_mode_there_is_no_form_and_no_route(tmp_path: Path):
    run = await write_viewed_run(tmp_path / "run")
    async with Store(run.db) as store:
        app = viewer_app(RunEpisodes(RunDir(run.folder), store))
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            assert 'name="token"' not in (await http.get(f"/episodes/{CLEAN}")).text
            assert (await http.post(f"/labels/{CLEAN}", content="", headers=FORM)).status_code == 404
    assert not any(getattr(route, "name", "") == "viewer_labels" for route in viewer_routes(lambda _r: None))  # type: ignore[arg-type, return-value]


def test_a_torn_last_line_keeps_its_own_line(tmp_path: Path):
    path = tmp_path / "labels" / "alice.jsonl"
    append_lines(path, '{"first": 1}\n')
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"torn": ')  # a write cut short
    append_lines(path, '{"third": 3}\n')
    assert path.read_text(encoding="utf-8").splitlines() == ['{"first": 1}', '{"torn": ', '{"third": 3}']


def test_a_bad_reviewer_name_is_refused(tmp_path: Path):
    with pytest.raises(ValueError, match="not a usable name"):
        LabelDesk.beside_run(tmp_path, "../../etc/passwd")


async def test_the_judge_is_hidden_while_labelling_unless_asked(tmp_path: Path):
    run = await write_viewed_run(tmp_path / "run")
    async with Store(run.db) as store:
        for blind in (True, False):
            desk = LabelDesk.beside_run(run.folder, "alice", blind=blind)
            app = viewer_app(RunEpisodes(RunDir(run.folder), store), labels=desk)
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
                page = (await http.get(f"/episodes/{FAULTED}")).text
                index = (await http.get("/")).text
            reasons = ("The amount was never stated." in page, "<th>Judge</th>" in page, "score 0.500" in page)
            if blind:
                assert reasons == (False, False, False)
                assert "Hidden while you label." in page and "the judge&#39;s verdicts hidden" in page
                assert 'class="badge fail">failed' not in index and "0.50" not in index
                assert 'badge none">not judged' not in index and index.count('<span class="muted">hidden</span>') == 4
                assert "hidden while you label</span>" in page and "not judged" not in page
                assert re.findall(r'name="verdict-([^"]+)" value="pass"', page) == ["state-closed", "answer"]
            else:
                assert reasons == (True, True, True)
                assert "(labelling as alice)" in page and 'class="badge fail">failed' in index


class OneEpisode:
    """A source holding one judged episode, read from memory (a fuzzed form needs no store)."""

    title, limited = "one episode", False

    def __init__(self) -> None:
        verdict = Verdict(task_id="chargeback/dispute", episode_id=CLEAN, score=1.0, passed=True, pass_threshold=1.0,
                          prompt_version="t", items=[ItemVerdict(id=item, kind="llm", weight=1.0, passed=True,
                                                                 deterministic=False) for item in ("answer", "a-b")])
        self.entry = EpisodeEntry(episode_id=CLEAN, task_id="chargeback/dispute", scenario_id="chargeback",
                                  fault_mode="E0", status="ok")
        self.detail = EpisodeDetail(entry=self.entry, verdict=verdict)

    async def entries(self) -> list[EpisodeEntry]:
        return [self.entry]

    async def episode(self, episode_id: str) -> EpisodeDetail | None:
        return self.detail if episode_id == CLEAN else None


FIELD_NAMES = st.sampled_from(["token", "verdict-answer", "note-answer", "verdict-a-b", "note-a-b", "verdict-",
                               "note-zzz", "x"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fields=st.lists(st.tuples(FIELD_NAMES, st.one_of(st.sampled_from(["pass", "fail", ""]), st.text(max_size=40))),
                       max_size=8),
       raw=st.one_of(st.none(), st.binary(max_size=200)))
def test_any_submission_is_saved_whole_or_refused_with_a_reason(tmp_path: Path, fields, raw):
    desk = LabelDesk(tmp_path / "labels" / "fuzz.jsonl", "fuzz")
    app = viewer_app(OneEpisode(), labels=desk)

    async def submit() -> httpx2.Response:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            body = raw if raw is not None else urlencode(
                [(name, desk.token if name == "token" and value == "pass" else value) for name, value in fields])
            return await http.post(f"/labels/{CLEAN}", content=body, headers=FORM)

    before = len(read_review_labels(desk.path)) if desk.path.exists() else 0
    answer = asyncio.run(submit())
    after = read_review_labels(desk.path) if desk.path.exists() else []  # the file always reads back
    assert answer.status_code in (303, 400, 403), answer.text
    if answer.status_code == 303:
        saved = int(answer.headers["location"].split("saved=")[1].split("#")[0])
        assert len(after) == before + saved
    else:
        assert answer.text and len(after) == before


async def test_an_unjudged_episode_has_nothing_to_label(tmp_path: Path):
    source = OneEpisode()
    source.detail = source.detail.model_copy(update={"verdict": None})
    desk = LabelDesk(tmp_path / "labels" / "x.jsonl", "x")
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=viewer_app(source, labels=desk)),
                                  base_url="http://127.0.0.1") as http:
        page = (await http.get(f"/episodes/{CLEAN}")).text
        assert "no rubric items to label" in page and "Not judged." in page and "<form class=\"labels\"" not in page
        answer = await _post(http, CLEAN, {"token": desk.token, "verdict-answer": "pass"})
    assert answer.status_code == 409 and "not judged" in answer.text and not desk.path.exists()
