"""The store's schema revision: Alembic migrations that `Store.init()` applies, and stores newer than the code
refused with a message that names both revisions."""

from __future__ import annotations

import functools
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect

from ._errors import StoreVersionError

MIGRATIONS = Path(__file__).with_name("_migrations")
VERSION_TABLE = "occusim_version"
# occusim 0.1.0 created these tables without a version table; that layout is revision 0001.
RELEASE_0_1_0_REVISION = "0001"
RELEASE_0_1_0_TABLES = frozenset({"episodes", "steps", "judgments"})


@functools.cache
def _scripts() -> ScriptDirectory:
    return ScriptDirectory(str(MIGRATIONS))


def head_revision() -> str:
    """The newest revision this release knows."""
    head = _scripts().get_current_head()
    if head is None:
        raise RuntimeError(f"no migrations in {MIGRATIONS}")
    return head


def stored_revisions(connection: Connection, schema: str | None) -> tuple[str, ...]:
    """The revisions recorded in the store (none for a new store or one written by 0.1.0)."""
    context = MigrationContext.configure(
        connection, opts={"version_table": VERSION_TABLE, "version_table_schema": schema}
    )
    return context.get_current_heads()


def is_current(connection: Connection, schema: str | None, where: str) -> bool:
    """Whether the store is at this release's revision; raises StoreVersionError when it is newer."""
    stored = stored_revisions(connection, schema)
    _refuse_unknown(stored, where)
    return stored == (head_revision(),)


def upgrade(connection: Connection, schema: str | None, where: str) -> None:
    """Bring the store to this release's revision: a new store from nothing, a 0.1.0 store from its tables.

    Runs inside the caller's transaction, which holds the store's migration lock.
    """
    stored = stored_revisions(connection, schema)
    _refuse_unknown(stored, where)
    if stored == (head_revision(),):
        return
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes.update(connection=connection, schema=schema)
    if not stored and _written_by_release_0_1_0(connection, schema, where):
        command.stamp(config, RELEASE_0_1_0_REVISION)
    command.upgrade(config, "head")


def _refuse_unknown(stored: tuple[str, ...], where: str) -> None:
    known = {script.revision for script in _scripts().walk_revisions()}
    unknown = [revision for revision in stored if revision not in known]
    if unknown:
        raise StoreVersionError(
            f"{where} is at store revision {', '.join(unknown)}, which occusim {_release()} does not know "
            f"(its newest is {head_revision()}): a later occusim release wrote it. Upgrade occusim to open "
            "this store, or use another one."
        )


def _written_by_release_0_1_0(connection: Connection, schema: str | None, where: str) -> bool:
    present = RELEASE_0_1_0_TABLES & set(inspect(connection).get_table_names(schema=schema))
    if present and present != RELEASE_0_1_0_TABLES:
        raise StoreVersionError(
            f"{where} has the tables {', '.join(sorted(present))} but not "
            f"{', '.join(sorted(RELEASE_0_1_0_TABLES - present))}, and no {VERSION_TABLE} table: it is not "
            "a store occusim wrote. Use another database (or schema), or restore the missing tables."
        )
    return bool(present)


def _release() -> str:
    try:
        return version("occusim")
    except PackageNotFoundError:
        return "(not installed)"
