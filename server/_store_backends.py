"""How the store's operations reach each database: an operation is a plain function of a SQLAlchemy
`Connection`, and a backend runs it in a transaction (`write`) or outside one (`read`).

SQLite goes through the standard library's driver in threads: every write in one writer thread (SQLite has one
writer at a time, so queueing writes there is the same order as waiting for its lock, without polling), which
commits the writes queued together in one transaction (`_group_commit`), and reads in a few reader threads
beside it (WAL lets them run while the writer writes). A write is one hand-off to the writer thread, where an
async driver makes several (begin, each statement, commit, the pool's reset), each a wake-up of both threads:
on a step's two statements that was 2.5 times the CPU.

PostgreSQL goes through asyncpg, each operation in one greenlet (`AsyncConnection.run_sync`), with the pool
sized by the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL
from sqlalchemy.pool import StaticPool

from ._group_commit import GroupCommitWriter
from ._limits import LoopSemaphore

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

T = TypeVar("T")
Operation = Callable[[Connection], T]

# Threads that read a SQLite file while its writer writes; reads are short, and more threads would only
# contend for the interpreter.
SQLITE_READERS = 4


class StoreBackend(Protocol):
    async def write(self, operation: Operation[T]) -> T:
        """Run `operation` in a transaction, committed when it returns and rolled back when it raises."""
        ...

    async def read(self, operation: Operation[T]) -> T:
        """Run `operation` on a connection of its own."""
        ...

    async def migrate(self, operation: Operation[T], *, where: str) -> T:
        """Run `operation` in a transaction that holds the store's migration lock against other processes
        (`where` names the store in errors)."""
        ...

    async def dispose(self) -> None:
        """Close every connection; the backend can still be used afterwards (it reconnects)."""
        ...


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets readers run beside the writer; NORMAL sync still survives a killed process (not power loss).
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


class SQLiteBackend:
    """A SQLite file (or an in-memory database) through the standard library's driver, in threads."""

    def __init__(self, url: URL, *, echo: bool = False) -> None:
        in_memory = (url.database or "") in ("", ":memory:")
        # The database file, None for an in-memory database.
        self.path: Path | None = None if in_memory else Path(url.database or "")
        options: dict[str, Any] = {
            "echo": echo,
            # The threads below share the pool's connections, one thread at a time per connection.
            "connect_args": {"timeout": 30, "check_same_thread": False},
        }
        if in_memory:
            # One connection holds the whole database, so every operation runs in the writer thread.
            options["poolclass"] = StaticPool
        self.engine: Engine = create_engine(url.set(drivername="sqlite+pysqlite"), **options)
        event.listen(self.engine, "connect", _sqlite_pragmas)
        self._in_memory = in_memory
        self._writer = GroupCommitWriter(self.engine)
        self._readers: ThreadPoolExecutor | None = None

    async def write(self, operation: Operation[T]) -> T:
        return await self._writer.write(operation)

    async def read(self, operation: Operation[T]) -> T:
        if self._in_memory:
            return await self._writer.run_alone(functools.partial(self._connected, operation))
        if self._readers is None:
            self._readers = ThreadPoolExecutor(SQLITE_READERS, thread_name_prefix="occusim-store-reader")
        return await _in_thread(self._readers, self._connected, operation)

    async def migrate(self, operation: Operation[T], *, where: str) -> T:
        return await self._writer.run_alone(functools.partial(self._migrating, operation, where))

    async def dispose(self) -> None:
        """Close the connections and let the threads end (a later operation starts new ones)."""
        await self._writer.run_alone(self.engine.dispose)
        self._writer.stop()
        if self._readers is not None:
            self._readers.shutdown(wait=False)
            self._readers = None

    def _connected(self, operation: Operation[T]) -> T:
        with self.engine.connect() as conn:
            return operation(conn)

    def _migrating(self, operation: Operation[T], where: str) -> T:
        with self.engine.connect() as conn:
            # Altering a table on SQLite rebuilds it, which must not cascade deletes to its children; the pragma
            # is ignored inside a transaction, so it is set around it.
            conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
            try:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                result = operation(conn)
                broken = conn.exec_driver_sql("PRAGMA foreign_key_check").first()
                if broken is not None:
                    raise RuntimeError(f"a migration left a dangling reference in {where}: {broken}")
                conn.commit()
                return result
            finally:
                conn.rollback()
                conn.exec_driver_sql("PRAGMA foreign_keys=ON")


class PostgresBackend:
    """PostgreSQL through asyncpg; callers beyond the pool's size wait their turn here rather than fail at the
    pool's timeout, so a step whose model call was paid is never lost to a busy database."""

    def __init__(self, url: URL, *, schema: str | None, echo: bool, pool_size: int, max_overflow: int,
                 pool_timeout: float) -> None:
        from sqlalchemy.ext.asyncio import create_async_engine

        engine = create_async_engine(url, echo=echo, pool_pre_ping=True, pool_size=pool_size,
                                     max_overflow=max_overflow, pool_timeout=pool_timeout)
        if schema is not None:
            engine = engine.execution_options(schema_translate_map={None: schema})
        self.engine: AsyncEngine = engine
        self._schema = schema
        self._connections = LoopSemaphore(pool_size + max_overflow)

    async def write(self, operation: Operation[T]) -> T:
        async with self._connections.hold(), self.engine.begin() as conn:
            return await conn.run_sync(operation)

    async def read(self, operation: Operation[T]) -> T:
        async with self._connections.hold(), self.engine.connect() as conn:
            return await conn.run_sync(operation)

    async def migrate(self, operation: Operation[T], *, where: str) -> T:
        async with self._migrating(self._schema) as conn:
            return await conn.run_sync(operation)

    async def dispose(self) -> None:
        await self.engine.dispose()

    @contextlib.asynccontextmanager
    async def _migrating(self, schema: str | None) -> AsyncIterator[AsyncConnection]:
        async with self.engine.connect() as conn:
            await conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"),
                               {"key": f"occusim store {schema or ''}"})
            if schema is not None:
                await conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
                # Alembic's ALTER statements name bare tables, which the schema translation does not reach.
                await conn.exec_driver_sql(f'SET LOCAL search_path TO "{schema}"')
            yield conn
            await conn.commit()


async def _in_thread(executor: ThreadPoolExecutor, function: Callable[..., T], *args: Any) -> T:
    return await asyncio.get_running_loop().run_in_executor(executor, functools.partial(function, *args))
