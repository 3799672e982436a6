"""Durable episodes: SQLite (WAL) by default or PostgreSQL by URL, through SQLAlchemy's core.

Every step is committed in its own transaction before its result leaves the server, so a killed process
loses no completed step, and several processes can share one database. Each operation is a function of a
connection, which the database's backend runs (`_store_backends`).
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, bindparam, func, insert, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from occusim.environments import EpisodeRecord, EpisodeStatus, StepRecord

from ._errors import (
    EpisodeClosedError,
    EpisodeExistsError,
    EpisodeNotFoundError,
    StepConflictError,
    StoreUnavailableError,
)
from ._store_backends import Operation, PostgresBackend, SQLiteBackend, StoreBackend, T
from ._store_records import EpisodeSummary, Judgment
from ._store_schema import is_current, upgrade
from ._tables import EPISODES, JUDGMENTS, STEPS, episodes, judgments, settings, steps

DEFAULT_URL = "sqlite+aiosqlite:///occusim.db"
DEFAULT_POOL_SIZE = 10
DEFAULT_MAX_OVERFLOW = 20
SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
# How long opening a SQLite file waits while another process creates it (as long as SQLite's busy timeout).
_NEW_FILE_WAIT = 30.0

# The statements every step runs, built once: building a statement and its cache key each time cost more CPU
# than running it (SQLAlchemy compiles each one once and then reuses it, keyed by its shape).
_ADVANCE = (
    update(episodes)
    .where(episodes.c.id == bindparam("episode"), episodes.c.status == "open",
           episodes.c.step_count == bindparam("index"))
    .values(state=bindparam("state"), step_count=bindparam("next"), updated_at=bindparam("now"))
)
_INSERT_STEP = insert(steps)
_INSERT_EPISODE = insert(episodes)


def normalize_url(url: str | os.PathLike[str]) -> str:
    """Accept async URLs, sync-driver URLs (`sqlite:///`, `postgresql://`) and plain file paths."""
    text = os.fspath(url)
    if "://" not in text:
        return f"sqlite+aiosqlite:///{text}"
    scheme, rest = text.split("://", 1)
    if scheme in ("sqlite", "sqlite+pysqlite"):
        return f"sqlite+aiosqlite://{rest}"
    if scheme in ("postgresql", "postgres", "postgresql+psycopg2", "postgresql+psycopg"):
        return f"postgresql+asyncpg://{rest}"
    return text


def utcnow() -> datetime:
    return datetime.now(UTC)


class Store:
    """Episodes, steps and judgments in one SQL database.

    `url` is a SQLAlchemy URL (`sqlite:///path.db`, `postgresql://user@host/db`, or their async forms
    `sqlite+aiosqlite://` and `postgresql+asyncpg://`), or a plain file path. `schema` (PostgreSQL only) keeps
    the tables in their own schema, created by `init()`. `pool_size` and `max_overflow` size PostgreSQL's
    connection pool; callers beyond `pool_size + max_overflow` wait their turn here rather than fail at the
    pool's timeout, so a step whose model call was paid is never lost to a busy database.
    """

    def __init__(self, url: str | os.PathLike[str] = DEFAULT_URL, *, schema: str | None = None,
                 echo: bool = False, pool_size: int = DEFAULT_POOL_SIZE,
                 max_overflow: int = DEFAULT_MAX_OVERFLOW, pool_timeout: float = 30.0) -> None:
        self.url = normalize_url(url)
        parsed = make_url(self.url)
        self.backend = parsed.get_backend_name()
        if schema is not None and self.backend != "postgresql":
            raise ValueError(f"a schema ({schema!r}) is only supported on PostgreSQL, not {self.backend}")
        if schema is not None and not SCHEMA_NAME.fullmatch(schema):
            # It is written into CREATE SCHEMA and search_path statements, which take no parameters.
            raise ValueError(f"schema name {schema!r} is not valid: use 1-63 letters, digits and '_', not starting "
                             "with a digit")
        self.schema = schema
        self._sqlite_path: Path | None = None
        self._database: StoreBackend
        if self.backend == "sqlite":
            sqlite = SQLiteBackend(parsed, echo=echo)
            self._sqlite_path, self._database = sqlite.path, sqlite
        else:
            self._database = PostgresBackend(parsed, schema=schema, echo=echo, pool_size=pool_size,
                                             max_overflow=max_overflow, pool_timeout=pool_timeout)

    async def run_write(self, operation: Operation[T]) -> T:
        """Run `operation` (a function of a SQLAlchemy `Connection`) in a write transaction, committed when it
        returns and rolled back when it raises."""
        return await self._database.write(operation)

    async def run_read(self, operation: Operation[T]) -> T:
        """Run `operation` (a function of a SQLAlchemy `Connection`) on a connection of its own."""
        return await self._database.read(operation)

    async def run_migration(self, operation: Operation[T]) -> T:
        """Run `operation` in a transaction that holds the store's migration lock against other processes."""
        return await self._database.migrate(operation, where=self._where())

    def __repr__(self) -> str:
        return f"Store({make_url(self.url).render_as_string(hide_password=True)!r})"

    async def init(self) -> None:
        """Create the store, or bring an existing one to this release's schema by its migrations.

        Raises StoreVersionError for a store a later release wrote (or tables that are not a whole store),
        StoreUnavailableError when the database cannot be reached or the file cannot be created.
        """
        where = self._where()
        try:
            if self._sqlite_path is not None and self._sqlite_path.parent != Path(""):
                await _makedirs(self._sqlite_path.parent)
            if await self._is_current():
                return
            await self.run_migration(lambda conn: upgrade(conn, self.schema, where))
        except (OSError, DBAPIError) as error:
            reason = getattr(error, "orig", None) or error
            raise StoreUnavailableError(
                f"cannot open {where}: {reason}; check --db (or OCCUSIM_DB) and that the database is "
                "running and reachable"
            ) from error

    async def _is_current(self) -> bool:
        """Whether the store is at this release's revision, read on this store's first connection.

        A connection's first statement switches a SQLite file to WAL (`_sqlite_pragmas`). While another
        process creates the same new file, SQLite answers that switch "database is locked" at once instead of
        waiting its busy timeout (its rule against deadlocks), so that one case waits here and tries again.
        """
        deadline = time.monotonic() + _NEW_FILE_WAIT
        where = self._where()
        while True:
            try:
                return await self.run_read(lambda conn: is_current(conn, self.schema, where))
            except OperationalError as error:
                if self.backend != "sqlite" or "locked" not in str(error.orig) or time.monotonic() > deadline:
                    raise
            await asyncio.sleep(0.05)

    def _where(self) -> str:
        shown = make_url(self.url).render_as_string(hide_password=True)
        return f"the store {shown}" + (f" (schema {self.schema})" if self.schema else "")

    async def close(self) -> None:
        await self._database.dispose()

    async def __aenter__(self) -> Store:
        await self.init()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- settings shared by every process of the store ----------------------------------------------

    async def claim_setting(self, name: str, value: str) -> str:
        """The store's value of setting `name`: `value` when no process has set it yet (then it is stored)."""
        def read(conn: Connection) -> str | None:
            return conn.execute(select(settings.c.value).where(settings.c.name == name)).scalar()

        def write(conn: Connection) -> str:
            found = read(conn)
            if found is None:
                conn.execute(insert(settings).values(name=name, value=value))
                return value
            return found

        try:
            return await self.run_write(write)
        except IntegrityError:  # another process stored it between our read and our insert
            stored = await self.run_read(read)
            if stored is None:
                raise
            return stored

    # -- episodes ----------------------------------------------------------------------------------

    async def create_episode(self, record: EpisodeRecord) -> None:
        """Insert a new open episode; raises EpisodeExistsError when the id is taken."""
        now = record.created_at or utcnow()
        values = EPISODES.to_row(record) | {"created_at": now, "updated_at": now, "step_count": len(record.steps)}
        try:
            await self.run_write(lambda conn: conn.execute(_INSERT_EPISODE, values))
        except IntegrityError:
            raise EpisodeExistsError(record.id) from None

    async def append_step(self, episode_id: str, step: StepRecord, state: Mapping[str, Any]) -> None:
        """Commit one step and the state after it, atomically.

        The episode row only advances when its step count still equals `step.index` and it is open, so
        two writers can never both record the same index. Raises StepConflictError (another writer won)
        or EpisodeClosedError / EpisodeNotFoundError.
        """
        now = step.created_at or utcnow()
        advance = {"episode": episode_id, "index": step.index, "state": dict(state), "next": step.index + 1,
                   "now": now}
        row = STEPS.to_row(step) | {"episode_id": episode_id, "created_at": now}

        def write(conn: Connection) -> None:
            if conn.execute(_ADVANCE, advance).rowcount != 1:
                status = _status(conn, episode_id)
                if status != "open":
                    raise EpisodeClosedError(episode_id, status)
                raise StepConflictError(episode_id, step.index)
            conn.execute(_INSERT_STEP, row)

        try:
            await self.run_write(write)
        except IntegrityError:
            raise StepConflictError(episode_id, step.index) from None

    async def close_episode(self, episode_id: str, *, status: EpisodeStatus, final_answer: str | None,
                            closed_at: datetime | None = None) -> datetime:
        """Close an open episode (submitted or expired); returns the closing time."""
        when = closed_at or utcnow()
        closing = (
            update(episodes)
            .where(episodes.c.id == episode_id, episodes.c.status == "open")
            .values(status=status, final_answer=final_answer, closed_at=when, updated_at=when)
        )

        def write(conn: Connection) -> None:
            if conn.execute(closing).rowcount != 1:
                raise EpisodeClosedError(episode_id, _status(conn, episode_id))

        await self.run_write(write)
        return when

    async def load_episode(self, episode_id: str) -> EpisodeRecord:
        """The episode as last committed, with every step in order; raises EpisodeNotFoundError."""
        def read(conn: Connection) -> tuple[Any, Sequence[Any]]:
            row = conn.execute(select(episodes).where(episodes.c.id == episode_id)).first()
            if row is None:
                raise EpisodeNotFoundError(episode_id)
            query = select(steps).where(steps.c.episode_id == episode_id).order_by(steps.c.step_index)
            return row, conn.execute(query).all()

        row, step_rows = await self.run_read(read)
        return EPISODES.from_row(row._mapping).model_copy(
            update={"steps": [STEPS.from_row(step_row._mapping) for step_row in step_rows]}
        )

    async def progress(self, episode_id: str) -> tuple[EpisodeStatus, int]:
        """The episode's stored status and number of committed steps: one small read, to tell whether a
        copy in memory is still current. Raises EpisodeNotFoundError."""
        query = select(episodes.c.status, episodes.c.step_count).where(episodes.c.id == episode_id)
        row = await self.run_read(lambda conn: conn.execute(query).first())
        if row is None:
            raise EpisodeNotFoundError(episode_id)
        return row.status, int(row.step_count)

    @property
    def shared(self) -> bool:
        """Whether other processes are expected to write the same episodes (a PostgreSQL store)."""
        return self.backend == "postgresql"

    async def list_episodes(self, *, status: EpisodeStatus | None = None, task_id: str | None = None,
                            tenant: str | None = None, limit: int = 100, offset: int = 0) -> list[EpisodeSummary]:
        """Episodes, newest first, filtered by status, task and tenant."""
        # The summary's columns only: the states (often the bulk of a row) are not read.
        columns = [episodes.c[name] for name in EpisodeSummary.model_fields]
        query = select(*columns).order_by(episodes.c.created_at.desc(), episodes.c.id).limit(limit).offset(offset)
        if status is not None:
            query = query.where(episodes.c.status == status)
        if task_id is not None:
            query = query.where(episodes.c.task_id == task_id)
        if tenant is not None:
            query = query.where(episodes.c.tenant == tenant)
        rows = await self.run_read(lambda conn: conn.execute(query).all())
        return [EpisodeSummary.model_validate(row._mapping) for row in rows]

    async def count_episodes(self, *, status: EpisodeStatus | None = None, tenant: str | None = None) -> int:
        query = select(func.count()).select_from(episodes)
        if status is not None:
            query = query.where(episodes.c.status == status)
        if tenant is not None:
            query = query.where(episodes.c.tenant == tenant)
        return int(await self.run_read(lambda conn: conn.execute(query).scalar_one()))

    async def expire_idle(self, before: datetime) -> list[str]:
        """Mark open episodes with no activity since `before` as expired; returns their ids."""
        def write(conn: Connection) -> list[str]:
            idle = select(episodes.c.id).where(episodes.c.status == "open", episodes.c.updated_at < before)
            ids = [r.id for r in conn.execute(idle).all()]
            if ids:
                now = utcnow()
                conn.execute(
                    update(episodes)
                    .where(episodes.c.id.in_(ids), episodes.c.status == "open", episodes.c.updated_at < before)
                    .values(status="expired", closed_at=now, updated_at=now)
                )
            return ids

        return await self.run_write(write)

    # -- judgments ---------------------------------------------------------------------------------

    async def save_judgment(self, episode_id: str, verdict: BaseModel | Mapping[str, Any], *,
                            judge_model: str | None = None, prompt_version: str | None = None) -> Judgment:
        """Store a verdict and mark a submitted episode as judged.

        `judge_model`, `prompt_version`, `score` and `passed` are read from the verdict when it carries them.
        """
        data = verdict.model_dump(mode="json") if isinstance(verdict, BaseModel) else dict(verdict)
        now = utcnow()
        judgment = Judgment(
            episode_id=episode_id,
            verdict=data,
            judge_model=judge_model if judge_model is not None else data.get("judge_model"),
            prompt_version=prompt_version if prompt_version is not None else data.get("prompt_version"),
            score=_float_or_none(data.get("score")),
            passed=data.get("passed") if isinstance(data.get("passed"), bool) else None,
            created_at=now,
        )
        row = JUDGMENTS.to_row(judgment)

        def write(conn: Connection) -> None:
            _status(conn, episode_id)  # a typed EpisodeNotFoundError, not the foreign key's IntegrityError
            conn.execute(insert(judgments).values(row))
            conn.execute(
                update(episodes)
                .where(episodes.c.id == episode_id, episodes.c.status == "submitted")
                .values(status="judged", updated_at=now)
            )

        await self.run_write(write)
        return judgment

    async def load_judgment(self, episode_id: str) -> Judgment | None:
        """The latest verdict stored for the episode, or None."""
        query = (
            select(judgments)
            .where(judgments.c.episode_id == episode_id)
            .order_by(judgments.c.created_at.desc(), judgments.c.id.desc())
            .limit(1)
        )
        row = await self.run_read(lambda conn: conn.execute(query).first())
        return None if row is None else JUDGMENTS.from_row(row._mapping)

    async def step_fields(self, episode_ids: Sequence[str], fields: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """These fields of every step of these episodes, in step order, without the rest of the steps; a field
        this store has no column for (written by an earlier release) is left out."""
        ids = list(dict.fromkeys(episode_ids))
        columns = [steps.c[name] for name in fields if name in steps.c]

        def read(conn: Connection) -> dict[str, list[dict[str, Any]]]:
            found: dict[str, list[dict[str, Any]]] = {}
            for start in range(0, len(ids), 500):  # SQLite takes a bounded number of parameters
                query = (
                    select(steps.c.episode_id, *columns)
                    .where(steps.c.episode_id.in_(ids[start:start + 500]))
                    .order_by(steps.c.episode_id, steps.c.step_index)
                )
                for row in conn.execute(query).all():
                    values = dict(row._mapping)
                    found.setdefault(values.pop("episode_id"), []).append(values)
            return found

        return await self.run_read(read)

    async def latest_judgments(self, episode_ids: Sequence[str]) -> dict[str, Judgment]:
        """The latest verdict of each of these episodes that has one, by episode id."""
        ids = list(dict.fromkeys(episode_ids))

        def read(conn: Connection) -> list[Any]:
            rows: list[Any] = []
            for start in range(0, len(ids), 500):  # SQLite takes a bounded number of parameters
                query = (
                    select(judgments)
                    .where(judgments.c.episode_id.in_(ids[start:start + 500]))
                    .order_by(judgments.c.created_at, judgments.c.id)
                )
                rows.extend(conn.execute(query).all())
            return rows

        found: dict[str, Judgment] = {}
        for row in await self.run_read(read):
            judgment = JUDGMENTS.from_row(row._mapping)
            found[judgment.episode_id] = judgment
        return found


def _status(conn: Connection, episode_id: str) -> EpisodeStatus:
    """The episode's stored status; raises EpisodeNotFoundError when there is no such episode."""
    row = conn.execute(select(episodes.c.status).where(episodes.c.id == episode_id)).first()
    if row is None:
        raise EpisodeNotFoundError(episode_id)
    status: EpisodeStatus = row.status
    return status


def _float_or_none(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


async def _makedirs(path: Path) -> None:
    await asyncio.to_thread(path.mkdir, parents=True, exist_ok=True)
