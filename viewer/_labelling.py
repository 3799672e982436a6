"""Labelling mode of the local viewer: a reviewer's pass/fail and note per rubric item, appended to a JSONL file.

The form posts to `POST /labels/{episode_id}`. Only a page this process served can post it: the form carries a
random token made when the viewer started, a cross-site request (`Sec-Fetch-Site`, `Origin`) is refused, and the
local app already refuses other Host names. No script is needed, so the page's Content-Security-Policy stays as
strict as the other pages'.
"""

from __future__ import annotations

import asyncio
import hmac
import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qsl, quote

from starlette.requests import Request

from occusim.environments import OccusimError
from occusim.judge import (
    NOTE_LIMIT,
    ItemVerdict,
    ReviewLabel,
    label_line,
    latest_labels,
    read_review_labels,
    reviewer_problem,
)

from ._models import EpisodeDetail, EpisodeEntry, EpisodeSource

FORM_LIMIT = 512 * 1024  # bytes of one form submission: notes for a long rubric fit many times over
FIELD_LIMIT = 1000


class LabelFormError(OccusimError):
    """A submission the desk refuses; `status_code` is the HTTP answer."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code


@dataclass(frozen=True)
class LabelRow:
    """One rubric item on the form: the judge's verdict beside the reviewer's last label, if any."""

    item: str
    kind: str
    description: str
    judge: bool | None
    passed: bool | None
    note: str
    labelled_at: datetime | None


@dataclass(frozen=True)
class LabelForm:
    """What the episode page shows in labelling mode."""

    reviewer: str
    file: str
    token: str
    action: str
    rows: list[LabelRow]
    saved: int | None
    next_url: str | None
    blind: bool


class LabelDesk:
    """One reviewer's labels file and the form token of this viewer process.

    `blind` (the default) keeps the judge's verdicts out of the pages, so that they cannot sway the labels that
    are to measure the judge."""

    def __init__(self, path: Path, reviewer: str, *, blind: bool = True) -> None:
        problem = reviewer_problem(reviewer)
        if problem is not None:
            raise ValueError(problem)
        self.path, self.reviewer, self.blind = path, reviewer, blind
        self.token = secrets.token_urlsafe(32)
        self._writing = asyncio.Lock()

    @classmethod
    def beside_run(cls, run_folder: Path, reviewer: str, *, blind: bool = True) -> LabelDesk:
        """The desk whose file is `RUN/labels/<reviewer>.jsonl`."""
        return cls(run_folder / "labels" / f"{reviewer}.jsonl", reviewer, blind=blind)

    def title(self, source_title: str, progress: str = "") -> str:
        hidden = ", the judge's verdicts hidden" if self.blind else ""
        return f"{source_title} (labelling as {self.reviewer}{hidden}{progress})"

    async def progress(self, entries: list[EpisodeEntry]) -> str:
        """How many of the listed episodes this reviewer has labelled, for the index's title."""
        listed = {entry.episode_id for entry in entries if entry.episode_id}
        labelled = set()
        if self.path.exists():
            placed = await asyncio.to_thread(read_review_labels, self.path)
            labelled = {p.label.episode_id for p in placed if p.label.reviewer == self.reviewer} & listed
        return f"; {len(labelled)} of {len(listed)} episodes labelled"

    def shown_entry(self, entry: EpisodeEntry) -> EpisodeEntry:
        """The index entry as the reviewer sees it: without the judge's outcome and score when blind."""
        return entry.model_copy(update={"passed": None, "score": None}) if self.blind else entry

    def shown_detail(self, detail: EpisodeDetail) -> EpisodeDetail:
        """The episode as the reviewer sees it: without the judge's verdict when blind."""
        if not self.blind:
            return detail
        return detail.model_copy(update={"entry": self.shown_entry(detail.entry), "verdict": None})

    def check_file(self) -> None:
        """Raise LabelFileError when the labels file exists but cannot be read back (before serving)."""
        if self.path.exists():
            read_review_labels(self.path)

    async def labels_of(self, episode_id: str) -> dict[str, ReviewLabel]:
        """This reviewer's last label per item of one episode."""
        if not self.path.exists():
            return {}
        placed = await asyncio.to_thread(read_review_labels, self.path)
        return {item: entry.label for (reviewer, episode, item), entry in latest_labels(placed).items()
                if reviewer == self.reviewer and episode == episode_id}

    async def form(self, detail: EpisodeDetail, source: EpisodeSource, *, base: str, saved: int | None) -> LabelForm:
        episode_id = detail.entry.episode_id or ""
        current = await self.labels_of(episode_id)
        items = detail.verdict.items if detail.verdict is not None else []
        rows = [LabelRow(item=item.id, kind=item.kind, description=item.description,
                         judge=None if self.blind else item.passed,
                         passed=current[item.id].passed if item.id in current else None,
                         note=current[item.id].note if item.id in current else "",
                         labelled_at=current[item.id].labelled_at if item.id in current else None)
                for item in items]
        ids = [entry.episode_id for entry in await source.entries() if entry.episode_id]
        following = ids[ids.index(episode_id) + 1] if episode_id in ids[:-1] else None
        return LabelForm(
            reviewer=self.reviewer, file=str(self.path), token=self.token, action=f"{base}/labels/{quote(episode_id)}",
            rows=rows, saved=saved, next_url=f"{base}/episodes/{quote(following)}" if following else None,
            blind=self.blind,
        )

    async def save(self, request: Request, detail: EpisodeDetail) -> int:
        """Check and append the submitted labels that differ from the last ones; the number appended."""
        fields = await _form_fields(request)
        if not hmac.compare_digest(fields.pop("token", "").encode(), self.token.encode()):
            raise LabelFormError(403, "this form was not served by this viewer (or the viewer restarted): reload "
                                      "the episode and label again")
        if detail.verdict is None:
            raise LabelFormError(409, "this episode was not judged, so it has no rubric items to label")
        items = {item.id: item for item in detail.verdict.items}
        chosen = _chosen(fields, items)
        current = await self.labels_of(detail.entry.episode_id or "")
        now = datetime.now(UTC)
        labels = []
        for item_id, (passed, note) in chosen.items():
            before = current.get(item_id)
            if before is not None and (before.passed, before.note) == (passed, note):
                continue
            labels.append(ReviewLabel(
                episode_id=detail.entry.episode_id or "", task_id=detail.entry.task_id,
                scenario_id=detail.entry.scenario_id, item=item_id, passed=passed, note=note,
                reviewer=self.reviewer, labelled_at=now,
            ))
        if labels:
            async with self._writing:
                await asyncio.to_thread(append_lines, self.path, "".join(label_line(label) for label in labels))
        return len(labels)


def append_lines(path: Path, text: str) -> None:
    """Append whole lines and flush them to disk before returning. A line left torn by a crash keeps its own
    line (a newline is written first), so the lines before and after it stay readable."""
    created = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(descriptor).st_size
        data = text.encode("utf-8")
        if size and os.pread(descriptor, 1, size - 1) != b"\n":
            data = b"\n" + data
        while data:
            data = data[os.write(descriptor, data):]
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    if created:  # the new file's name reaches the disk too
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def cross_site(request: Request) -> str | None:
    """Why a POST comes from another site; None when it may come from this viewer's own page."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"a {site} request may not save labels"
    origin = request.headers.get("origin")
    # The pages send no referrer, so a browser's same-origin form posts carry `Origin: null`.
    if origin is not None and origin != "null" and origin != f"{request.url.scheme}://{request.url.netloc}":
        return f"a request from {origin} may not save labels"
    return None


async def _form_fields(request: Request) -> dict[str, str]:
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise LabelFormError(415, "send the labelling form (application/x-www-form-urlencoded)")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_LIMIT:
            raise LabelFormError(413, f"the form is larger than {FORM_LIMIT} bytes")
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=FIELD_LIMIT)
    except (UnicodeDecodeError, ValueError) as error:
        raise LabelFormError(400, f"the form cannot be read: {error}") from None
    fields: dict[str, str] = {}
    for name, value in pairs:
        if name in fields:
            raise LabelFormError(400, f"the form field {name!r} is given twice")
        fields[name] = value
    return fields


def _chosen(fields: dict[str, str], items: dict[str, ItemVerdict]) -> dict[str, tuple[bool, str]]:
    """The verdict and note given per item; an item with a note but no verdict is an error, not dropped."""
    out: dict[str, tuple[bool, str]] = {}
    for name in fields:
        prefix, _, item_id = name.partition("-")
        if prefix not in ("verdict", "note") or item_id not in items:
            raise LabelFormError(400, f"the form field {name!r} names no rubric item of this episode")
    for item_id in items:
        verdict = fields.get(f"verdict-{item_id}", "")
        note = fields.get(f"note-{item_id}", "").strip().replace("\r\n", "\n")
        if len(note) > NOTE_LIMIT:
            raise LabelFormError(400, f"the note on {item_id!r} is longer than {NOTE_LIMIT} characters")
        if verdict == "":
            if note:
                raise LabelFormError(400, f"the note on {item_id!r} has no pass/fail: choose one, or clear the note")
            continue
        if verdict not in ("pass", "fail"):
            raise LabelFormError(400, f"the verdict on {item_id!r} is {verdict!r}: send pass or fail")
        out[item_id] = (verdict == "pass", note)
    return out


async def save_labels(request: Request, source: EpisodeSource, desk: LabelDesk) -> tuple[int, str]:
    """The POST route's work: refuse cross-site and malformed submissions, then save. (303, the episode's page
    to show again) or (an error status, why)."""
    refused = cross_site(request)
    if refused is not None:
        return 403, refused
    episode_id = request.path_params["episode_id"]
    detail = await source.episode(episode_id)
    if detail is None:
        return 404, f"no episode {episode_id!r} here"
    try:
        saved = await desk.save(request, detail)
    except LabelFormError as error:
        return error.status_code, str(error)
    return 303, f"/episodes/{quote(episode_id)}?saved={saved}#labels"
