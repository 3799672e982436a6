"""The store on both backends: a real SQLite file and the real PostgreSQL server (own schema per test)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import asyncpg
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from occusim.environments import EpisodeRecord, FaultSettings, InjectedFault, StepRecord, Usage
from occusim.server import (
    EpisodeClosedError,
    EpisodeExistsError,
    EpisodeNotFoundError,
    EpisodeService,
    StepConflictError,
    Store,
    StoreVersionError,
)
from occusim.server._store import normalize_url, utcnow
from occusim.server._store_schema import head_revision, known_revisions, migrate, migration_scripts
from occusim.server._tables import metadata
from tests.helpers import CHEST_PAIN, POSTGRES_URL, TriageModel, triage_catalog

PG_URL = POSTGRES_URL
PG_DSN = PG_URL.replace("postgresql+asyncpg://", "postgresql://", 1)


class Database(NamedTuple):
    url: str
    schema: str | None

    def store(self) -> Store:
        return Store(self.url, schema=self.schema)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def database(request, tmp_path):
    """Where a store lives: a fresh SQLite file, or a fresh schema on the PostgreSQL server (dropped after)."""
    if request.param == "sqlite":
        yield Database(str(tmp_path / "store.db"), None)
        return
    schema = f"occusim_test_{uuid.uuid4().hex[:12]}"
    yield Database(PG_URL, schema)
    await drop_schema(schema)


async def drop_schema(schema: str | None) -> None:
    """Drop a test's PostgreSQL schema (nothing for SQLite)."""
    if schema is None:
        return
    connection = await asyncpg.connect(PG_DSN)
    try:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await connection.close()


@pytest.fixture
async def store(database):
    store = database.store()
    await store.init()
    yield store
    await store.close()


def twin(store: Store) -> Store:
    """Another connection pool on the same database, as a second process would open."""
    return Store(store.url, schema=store.schema)


def episode(episode_id: str = "ep-1", **fields) -> EpisodeRecord:
    state = {"patients": [{"id": "P1", "priority": 3}], "note": "ünïcode ✓"}
    values = dict(id=episode_id, task_id="t/one", scenario_id="s", world_model="scripted/x", mode="tracked",
                  faults=FaultSettings(mode="E3", seed=4), initial_state=state, state=state, tenant="acme",
                  created_at=utcnow())
    values.update(fields)
    return EpisodeRecord(**values)


def step(index: int, **fields) -> StepRecord:
    values = dict(index=index, tool="get_patient", arguments={"patient_id": "P1"},
                  observation={"id": "P1", "priority": 3}, state_hash="abc", created_at=utcnow(),
                  usage=Usage(prompt_tokens=120, completion_tokens=30, cost_usd=0.002, calls=2, cached_calls=1),
                  latency_ms=12.5)
    values.update(fields)
    return StepRecord(**values)


async def test_an_episode_round_trips_with_every_step_field(store):
    record = episode()
    await store.create_episode(record)
    faulty = step(1, observation={"patients": []}, true_observation={"patients": [{"id": "P1"}]},
                  fault=InjectedFault(kind="implicit", label="truncate_list", detail="/patients: 2 -> 1 items"),
                  state_patch=[{"op": "replace", "path": "/patients/0/priority", "value": 1}], is_error=False)
    erroring = step(2, observation={"error": {"type": "simulator_error", "message": "x"}}, is_error=True,
                    error="x", usage=Usage())
    new_state = {"patients": [{"id": "P1", "priority": 1}], "note": "ünïcode ✓"}
    first = step(0)
    await store.append_step("ep-1", first, record.state)
    await store.append_step("ep-1", faulty, new_state)
    await store.append_step("ep-1", erroring, new_state)

    loaded = await store.load_episode("ep-1")

    assert loaded.steps == [first, faulty, erroring]
    assert loaded.steps[0].usage == Usage(prompt_tokens=120, completion_tokens=30, cost_usd=0.002, calls=2,
                                          cached_calls=1)
    assert loaded.steps[2].usage.cost_usd is None and loaded.steps[0].true_observation is None
    assert loaded.state == new_state and loaded.initial_state == record.initial_state
    assert loaded.faults == FaultSettings(mode="E3", seed=4)
    assert loaded.model_dump(exclude={"steps", "state"}) == record.model_dump(exclude={"steps", "state"})
    assert loaded.created_at.tzinfo is not None


async def test_step_indexes_are_guarded(store):
    await store.create_episode(episode())
    await store.append_step("ep-1", step(0), {})

    with pytest.raises(StepConflictError, match="step 0"):
        await store.append_step("ep-1", step(0), {"changed": True})
    with pytest.raises(StepConflictError):
        await store.append_step("ep-1", step(5), {})
    with pytest.raises(EpisodeNotFoundError):
        await store.append_step("nope", step(0), {})
    assert len((await store.load_episode("ep-1")).steps) == 1
    assert (await store.load_episode("ep-1")).state == {}

    await store.close_episode("ep-1", status="submitted", final_answer="done")
    with pytest.raises(EpisodeClosedError, match="submitted"):
        await store.append_step("ep-1", step(1), {})
    with pytest.raises(EpisodeClosedError):
        await store.close_episode("ep-1", status="submitted", final_answer="again")
    with pytest.raises(EpisodeExistsError):
        await store.create_episode(episode())


async def test_racing_writers_from_two_pools_record_each_index_once(store):
    other = twin(store)
    try:
        await store.create_episode(episode())
        for index in range(5):
            results = await asyncio.gather(
                store.append_step("ep-1", step(index, tool="a"), {"writer": "a", "index": index}),
                other.append_step("ep-1", step(index, tool="b"), {"writer": "b", "index": index}),
                return_exceptions=True,
            )
            assert sum(r is None for r in results) == 1
            assert sum(isinstance(r, StepConflictError) for r in results) == 1
        loaded = await other.load_episode("ep-1")
        assert [s.index for s in loaded.steps] == [0, 1, 2, 3, 4]
        assert loaded.state["index"] == 4
        assert loaded.state["writer"] == loaded.steps[-1].tool
    finally:
        await other.close()


async def test_list_and_count_episodes(store):
    base = utcnow()
    for number in range(4):
        await store.create_episode(
            episode(f"ep-{number}", task_id="t/a" if number % 2 else "t/b",
                    tenant="acme" if number < 3 else "other", created_at=base + timedelta(seconds=number))
        )
    await store.close_episode("ep-0", status="submitted", final_answer="x")
    await store.append_step("ep-1", step(0), {})

    everything = await store.list_episodes()
    assert [e.id for e in everything] == ["ep-3", "ep-2", "ep-1", "ep-0"]
    assert everything[2].step_count == 1 and everything[3].status == "submitted"
    assert [e.id for e in await store.list_episodes(status="open", tenant="acme")] == ["ep-2", "ep-1"]
    assert [e.id for e in await store.list_episodes(task_id="t/a")] == ["ep-3", "ep-1"]
    assert [e.id for e in await store.list_episodes(limit=2, offset=1)] == ["ep-2", "ep-1"]
    assert await store.count_episodes() == 4 and await store.count_episodes(status="open") == 3


async def test_judgments_are_stored_and_mark_the_episode_judged(store):
    await store.create_episode(episode())
    with pytest.raises(EpisodeNotFoundError):
        await store.save_judgment("nope", {"score": 1})
    assert await store.load_judgment("ep-1") is None

    await store.save_judgment("ep-1", {"score": 0.25, "passed": False, "judge_model": "m1", "prompt_version": "p1"})
    assert (await store.load_episode("ep-1")).status == "open"  # only a submitted episode becomes judged
    await store.close_episode("ep-1", status="submitted", final_answer="x")
    await store.save_judgment("ep-1", {"score": 1.0, "passed": True, "items": [{"id": "a"}]}, judge_model="m2",
                              prompt_version="p2")

    judgment = await store.load_judgment("ep-1")
    assert judgment.verdict == {"score": 1.0, "passed": True, "items": [{"id": "a"}]}
    assert (judgment.judge_model, judgment.prompt_version, judgment.score, judgment.passed) == ("m2", "p2", 1.0, True)
    assert judgment.created_at.tzinfo is not None
    assert (await store.load_episode("ep-1")).status == "judged"


async def test_expire_idle_only_touches_idle_open_episodes(store):
    await store.create_episode(episode("old", created_at=utcnow() - timedelta(hours=2)))
    await store.create_episode(episode("fresh"))
    await store.create_episode(episode("done", created_at=utcnow() - timedelta(hours=2)))
    await store.close_episode("done", status="submitted", final_answer="x", closed_at=utcnow() - timedelta(hours=2))

    assert await store.expire_idle(utcnow() - timedelta(hours=1)) == ["old"]
    assert (await store.load_episode("old")).status == "expired"
    assert (await store.load_episode("old")).closed_at is not None
    assert (await store.load_episode("fresh")).status == "open"
    assert (await store.load_episode("done")).status == "submitted"


async def test_a_service_on_each_pool_can_drive_the_same_episode(store):
    other = twin(store)
    try:
        model = TriageModel()
        here = EpisodeService(triage_catalog(), store, world_model=model.model)
        there = EpisodeService(triage_catalog(), other, world_model=model.model)
        started = await here.create(CHEST_PAIN)
        await started.step("set_priority", {"patient_id": "P1", "priority": 1})

        continued = await there.open(started.id)
        assert continued.state == started.state
        await continued.step("set_priority", {"patient_id": "P2", "priority": 2})
        await started.step("list_patients", {})  # stale in memory: catches up through the store

        final = await there.open(started.id)
        await final.submit("done")
        loaded = await store.load_episode(started.id)
        assert [s.tool for s in loaded.steps] == ["set_priority", "set_priority", "list_patients"]
        assert loaded.steps[2].observation["patients"][1]["priority"] == 2
        assert loaded.status == "submitted"
    finally:
        await other.close()


async def test_sqlite_uses_wal_and_creates_missing_folders(tmp_path):
    path = tmp_path / "nested" / "deeper" / "occusim.db"
    store = Store(str(path))
    await store.init()
    await store.create_episode(episode())
    await store.close()
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_urls_are_normalized():
    assert normalize_url("runs/x.db") == "sqlite+aiosqlite:///runs/x.db"
    assert normalize_url("sqlite:////abs/x.db") == "sqlite+aiosqlite:////abs/x.db"
    assert normalize_url("postgresql://u@h/db") == "postgresql+asyncpg://u@h/db"
    assert normalize_url("postgresql+asyncpg://u@h/db") == "postgresql+asyncpg://u@h/db"
    assert "secret" not in repr(Store("postgresql://u:secret@h/db"))
    with pytest.raises(ValueError, match="only supported on PostgreSQL"):
        Store("x.db", schema="s")


async def test_an_in_memory_store_works_for_one_process():
    async with Store("sqlite+aiosqlite://") as store:
        await store.create_episode(episode())
        await store.append_step("ep-1", step(0), {"a": 1})
        assert (await store.load_episode("ep-1")).state == {"a": 1}


# -- the schema's revisions -----------------------------------------------------------------------------

RELEASE_0_1_0 = Path(__file__).with_name("store_0_1_0")
RELEASE_0_1_0_START = datetime(2026, 11, 30, 9, 0, 0, 123456, tzinfo=UTC)


async def write_release_0_1_0_store(database: Database) -> None:
    """The store occusim 0.1.0 wrote (its own `sqlite3 .dump` / `pg_dump --inserts`): no version table."""
    if database.schema is None:
        script = (RELEASE_0_1_0 / "sqlite.sql").read_text(encoding="utf-8")
        with contextlib.closing(sqlite3.connect(database.url)) as connection:
            connection.executescript(script)
        return
    script = (RELEASE_0_1_0 / "postgresql.sql").read_text(encoding="utf-8")
    connection = await asyncpg.connect(PG_DSN)
    try:
        await connection.execute(script.replace("occusim_release_0_1_0", database.schema))
    finally:
        await connection.close()


async def stored_revisions(store: Store) -> list[str]:
    table = sa.table("occusim_version", sa.column("version_num"), schema=store.schema)
    return await store.run_read(lambda conn: list(conn.execute(sa.select(table.c.version_num)).scalars()))


async def test_a_store_written_by_release_0_1_0_is_migrated_and_reads_back(database):
    await write_release_0_1_0_store(database)
    async with database.store() as store:
        assert await stored_revisions(store) == [head_revision()]
        judged = await store.load_episode("ep-submitted")
        still_open = await store.load_episode("ep-open")
        judgment = await store.load_judgment("ep-submitted")
        listed = await store.list_episodes()

        assert (judged.status, judged.task_id, judged.world_model, judged.tenant) == (
            "judged", "triage/chest-pain", "scripted/triage", "acme")
        assert judged.faults == FaultSettings(mode="E3", count=2, duration=1, seed=7)
        assert judged.initial_state["patients"][0] == {"id": "P1", "priority": 3, "name": "Zoë"}
        assert judged.state["patients"][0]["priority"] == 1 and judged.final_answer == "P1 is priority 1"
        assert judged.created_at == RELEASE_0_1_0_START
        assert judged.closed_at == RELEASE_0_1_0_START + timedelta(seconds=4)
        assert [s.tool for s in judged.steps] == ["get_patient", "set_priority", "list_patients"]
        first, faulty, failed = judged.steps
        assert first.usage == Usage(prompt_tokens=120, completion_tokens=30, cost_usd=0.002, calls=2, cached_calls=1)
        assert (first.latency_ms, first.state_hash, first.fault, first.true_observation) == (12.5, "a1", None, None)
        assert faulty.fault == InjectedFault(kind="implicit", label="drop_fields", detail="/previous")
        assert faulty.true_observation == {"ok": True, "previous": 3}
        assert faulty.state_patch == [{"op": "replace", "path": "/patients/0/priority", "value": 1}]
        assert failed.is_error and failed.observation == {"error": {"type": "http_500", "message": "upstream"}}
        assert failed.created_at == RELEASE_0_1_0_START + timedelta(seconds=3)
        assert (still_open.mode, still_open.world_model, still_open.tenant) == ("history", "", None)
        assert still_open.steps[0].observation is None and "crate" in still_open.steps[0].error
        assert judgment.verdict["items"] == [{"id": "a", "met": True}]
        assert (judgment.score, judgment.passed, judgment.judge_model) == (0.75, True, "scripted/judge")
        assert [(e.id, e.step_count) for e in listed] == [("ep-open", 1), ("ep-submitted", 3)]

        # The adopted store keeps working: the open episode goes on, new ones are created.
        await store.append_step("ep-open", step(1), {"after": "migration"})
        await store.create_episode(episode("ep-new"))
        assert (await store.load_episode("ep-open")).state == {"after": "migration"}
        assert await store.count_episodes() == 3


async def test_migrations_build_exactly_the_tables_the_code_declares(database):
    """A field added to a record (so a column to a table) without its migration fails here."""
    await write_release_0_1_0_store(database)
    async with database.store() as migrated:
        assert await schema_differences(migrated) == []
    fresh = Database(database.url + "-fresh", None) if database.schema is None else Database(
        database.url, database.schema + "_fresh")
    try:
        async with fresh.store() as created:
            assert await schema_differences(created) == []
    finally:
        await drop_schema(fresh.schema)


def test_the_revisions_read_from_file_names_are_alembics():
    scripts = migration_scripts()
    assert set(known_revisions()) == {script.revision for script in scripts.walk_revisions()}
    assert head_revision() == scripts.get_current_head()


async def migrated_from_nothing(database: Database) -> Store:
    """A store built by running every migration from an empty database, as a new store was before."""
    store = database.store()
    await store.run_migration(lambda conn: migrate(conn, store.schema))
    return store


def reflected(connection: sa.Connection, schema: str | None) -> dict[str, object]:
    """Everything the database says about each table, the version table included."""
    inspector = sa.inspect(connection)
    tables = {}
    for name in sorted(inspector.get_table_names(schema=schema)):
        # By name: a column a migration added comes last in a migrated table, in its place in a created one.
        # A sequence's default names its schema, which differs between the two stores compared.
        columns = sorted((c["name"], str(c["type"]), c["nullable"], str(c.get("default")).replace(f"{schema}.", ""))
                         for c in inspector.get_columns(name, schema=schema))
        keys = inspector.get_pk_constraint(name, schema=schema)["constrained_columns"]
        foreign = sorted((tuple(f["constrained_columns"]), f["referred_table"], tuple(f["referred_columns"]),
                          tuple(sorted((f.get("options") or {}).items())))
                         for f in inspector.get_foreign_keys(name, schema=schema))
        indexes = sorted((i["name"], tuple(i["column_names"]), bool(i["unique"]))
                         for i in inspector.get_indexes(name, schema=schema))
        uniques = sorted((u["name"], tuple(u["column_names"])) for u in
                         inspector.get_unique_constraints(name, schema=schema))
        tables[name] = (columns, keys, foreign, indexes, uniques)
    return tables


async def test_a_new_store_is_created_as_its_migrations_would_build_it(database, tmp_path):
    """New stores are created from the tables, without Alembic; they must be the store the migrations build."""
    old = await migrated_from_nothing(database)
    new = (Database(str(tmp_path / "created.db"), None) if database.schema is None
           else Database(database.url, database.schema + "_new"))
    try:
        async with new.store() as created:
            built = await created.run_read(lambda conn: reflected(conn, created.schema))
            assert await stored_revisions(created) == [head_revision()]
            await created.create_episode(episode())
        migrated = await old.run_read(lambda conn: reflected(conn, old.schema))
        assert built == migrated and "occusim_version" in built
    finally:
        await old.close()
        await drop_schema(new.schema)


def test_opening_a_new_or_current_store_does_not_import_alembic(tmp_path):
    import subprocess
    import sys

    script = (
        "import asyncio, sys\n"
        "from occusim.server import Store\n"
        "async def main():\n"
        f"    for _ in range(2):\n"
        f"        async with Store({str(tmp_path / 'new.db')!r}) as store:\n"
        "            await store.count_episodes()\n"
        "asyncio.run(main())\n"
        "print('alembic' in sys.modules, 'mako' in sys.modules)\n"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["False", "False"]


async def schema_differences(store: Store) -> list[object]:
    # Reflection ignores the engine's schema translation, so compare against the tables in that schema.
    target = sa.MetaData(schema=store.schema)
    for table in metadata.sorted_tables:
        table.to_metadata(target, schema=store.schema)

    def compare(connection: sa.Connection) -> list[object]:
        context = MigrationContext.configure(connection, opts={
            "include_schemas": store.schema is not None,
            "include_name": lambda name, kind, _parents: kind != "schema" or name == store.schema,
            "include_object": lambda _obj, name, kind, _reflected, _compare: name != "occusim_version",
        })
        return compare_metadata(context, target)

    return await store.run_read(compare)


async def test_a_store_newer_than_the_code_is_refused(database):
    async with database.store() as store:
        await store.create_episode(episode())
        table = sa.table("occusim_version", sa.column("version_num"), schema=store.schema)
        await store.run_write(lambda conn: conn.execute(sa.update(table).values(version_num="0999")))

    later = database.store()
    try:
        with pytest.raises(StoreVersionError) as refused:
            await later.init()
    finally:
        await later.close()
    message = str(refused.value)
    assert "store revision 0999" in message and f"its newest is {head_revision()}" in message
    assert "Upgrade occusim" in message
    stored = sa.table("episodes", sa.column("id"), schema=database.schema)
    unopened = Store(database.url, schema=database.schema)
    try:
        ids = await unopened.run_read(lambda conn: list(conn.execute(sa.select(stored.c.id)).scalars()))
    finally:
        await unopened.close()
    assert ids == ["ep-1"]  # untouched


async def test_tables_that_are_not_a_whole_store_are_refused(tmp_path):
    path = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("CREATE TABLE episodes (id TEXT PRIMARY KEY)")
    store = Store(path)
    try:
        with pytest.raises(StoreVersionError, match="not a store occusim wrote"):
            await store.init()
    finally:
        await store.close()


async def test_processes_opening_a_new_store_at_once_create_it_once(database):
    stores = [database.store() for _ in range(3)]
    try:
        await asyncio.gather(*(store.init() for store in stores))
        await stores[0].create_episode(episode())
        assert [e.id for e in await stores[2].list_episodes()] == ["ep-1"]
        assert await stored_revisions(stores[1]) == [head_revision()]
    finally:
        for store in stores:
            await store.close()


async def test_a_new_sqlite_file_opened_by_several_stores_at_once_is_never_reported_locked(tmp_path):
    """While one connection makes a new file WAL, SQLite refuses another's switch at once ("database is
    locked") instead of waiting; opening a store waits for the file instead (2-3 % of rounds failed before)."""
    for round_ in range(100):
        stores = [Store(tmp_path / f"round-{round_}.db") for _ in range(3)]
        try:
            await asyncio.gather(*(store.init() for store in stores))
        finally:
            for store in stores:
                await store.close()


@pytest.mark.postgres
async def test_more_writers_than_connections_wait_their_turn_instead_of_failing():
    # One connection and a pool timeout far shorter than a commit under this load: before the store queued
    # its callers, most of these writes failed with "QueuePool limit of size 1 overflow 0 reached".
    store = Store(PG_URL, schema=f"occusim_test_{uuid.uuid4().hex[:12]}", pool_size=1, max_overflow=0,
                  pool_timeout=0.001)
    await store.init()
    try:
        ids = [f"ep-{n}" for n in range(40)]
        await asyncio.gather(*(store.create_episode(episode(episode_id)) for episode_id in ids))
        state = {"patients": [{"id": "P1", "priority": 1}]}
        await asyncio.gather(*(store.append_step(episode_id, step(0), state) for episode_id in ids),
                             *(store.load_episode(episode_id) for episode_id in ids))
        loaded = await asyncio.gather(*(store.load_episode(episode_id) for episode_id in ids))
    finally:
        await store.close()
        connection = await asyncpg.connect(PG_DSN)
        try:
            await connection.execute(f'DROP SCHEMA "{store.schema}" CASCADE')
        finally:
            await connection.close()
    assert [len(record.steps) for record in loaded] == [1] * len(ids)
    assert all(record.state == state for record in loaded)


async def test_the_command_line_refuses_a_newer_store_with_its_message_not_a_traceback(tmp_path, capsys):
    from occusim.clients.cli import main

    path = tmp_path / "later.db"
    async with Store(path) as store:
        await store.create_episode(episode())
        table = sa.table("occusim_version", sa.column("version_num"))
        await store.run_write(lambda conn: conn.execute(sa.update(table).values(version_num="0999")))

    # The command runs its own event loop, so it runs in a thread here.
    code = await asyncio.to_thread(main, ["judge", "ep-1", "--db", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("occusim judge: the store ") and "store revision 0999" in err
    assert "Upgrade occusim" in err and "Traceback" not in err
