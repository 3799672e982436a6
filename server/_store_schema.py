"""The store's schema revision: Alembic migrations that `Store.init()` applies, and stores newer than the code
refused with a message that names both revisions.

Alembic is imported only to migrate an existing store. A store at this release's revision is recognised, and a
new store created, from the tables themselves (`_tables.metadata`, which the migrations build too: the store
tests compare the two), so a run that opens a current or new store does not pay Alembic's import.
"""

from __future__ import annotations

import functools
import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Column, Connection, MetaData, PrimaryKeyConstraint, String, Table, inspect, select

from ._errors import StoreVersionError
from ._tables import metadata

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory

MIGRATIONS = Path(__file__).with_name("_migrations")
VERSION_TABLE = "occusim_version"
# occusim 0.1.0 created these tables without a version table; that layout is revision 0001.
RELEASE_0_1_0_REVISION = "0001"
RELEASE_0_1_0_TABLES = frozenset({"episodes", "steps", "judgments"})
# Each migration file is named after its revision id: versions/0004_step_audit_flags.py is revision 0004.
_REVISION_FILE = re.compile(r"^(\d{4})_\w+\.py$")

# The version table as Alembic creates it (`version_table=VERSION_TABLE`), for stores created without Alembic.
_VERSIONS = Table(VERSION_TABLE, MetaData(), Column("version_num", String(32), nullable=False),
                  PrimaryKeyConstraint("version_num", name=f"{VERSION_TABLE}_pkc"))


@functools.cache
def known_revisions() -> tuple[str, ...]:
    """Every revision this release knows, oldest first, read from the migration files' names."""
    found = sorted(match.group(1) for path in (MIGRATIONS / "versions").iterdir()
                   if (match := _REVISION_FILE.match(path.name)))
    if not found:
        raise RuntimeError(f"no migrations in {MIGRATIONS / 'versions'}")
    return tuple(found)


def head_revision() -> str:
    """The newest revision this release knows."""
    return known_revisions()[-1]


def stored_revisions(connection: Connection, schema: str | None) -> tuple[str, ...]:
    """The revisions recorded in the store (none for a new store or one written by 0.1.0)."""
    if not inspect(connection).has_table(VERSION_TABLE, schema=schema):
        return ()
    versions = _version_table(schema)
    return tuple(sorted(connection.execute(select(versions.c.version_num)).scalars()))


def is_current(connection: Connection, schema: str | None, where: str) -> bool:
    """Whether the store is at this release's revision; raises StoreVersionError when it is newer."""
    stored = stored_revisions(connection, schema)
    _refuse_unknown(stored, where)
    return stored == (head_revision(),)


def upgrade(connection: Connection, schema: str | None, where: str) -> None:
    """Bring the store to this release's revision: a new store from the tables, a 0.1.0 store from its tables,
    any other by its migrations.

    Runs inside the caller's transaction, which holds the store's migration lock.
    """
    stored = stored_revisions(connection, schema)
    _refuse_unknown(stored, where)
    if stored == (head_revision(),):
        return
    present = set(inspect(connection).get_table_names(schema=schema))
    if not stored and not present & set(metadata.tables):
        _create(connection, schema)
        return
    migrate(connection, schema, from_release_0_1_0=not stored and _written_by_release_0_1_0(present, where))


def migrate(connection: Connection, schema: str | None, *, from_release_0_1_0: bool = False) -> None:
    """Run the migrations up to the head with Alembic, from the stored revision (from 0001 for a store that
    0.1.0 wrote, which records none)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes.update(connection=connection, schema=schema)
    if from_release_0_1_0:
        command.stamp(config, RELEASE_0_1_0_REVISION)
    command.upgrade(config, "head")


def _create(connection: Connection, schema: str | None) -> None:
    """A new store: the tables as this release defines them, recorded at the head revision."""
    metadata.create_all(connection)
    versions = _version_table(schema)
    versions.create(connection)
    connection.execute(versions.insert().values(version_num=head_revision()))


def _version_table(schema: str | None) -> Table:
    return _VERSIONS if schema is None else _VERSIONS.to_metadata(MetaData(), schema=schema)


def _refuse_unknown(stored: tuple[str, ...], where: str) -> None:
    unknown = [revision for revision in stored if revision not in known_revisions()]
    if unknown:
        raise StoreVersionError(
            f"{where} is at store revision {', '.join(unknown)}, which occusim {_release()} does not know "
            f"(its newest is {head_revision()}): a later occusim release wrote it. Upgrade occusim to open "
            "this store, or use another one."
        )


def _written_by_release_0_1_0(present: set[str], where: str) -> bool:
    found = RELEASE_0_1_0_TABLES & present
    if found and found != RELEASE_0_1_0_TABLES:
        raise StoreVersionError(
            f"{where} has the tables {', '.join(sorted(found))} but not "
            f"{', '.join(sorted(RELEASE_0_1_0_TABLES - found))}, and no {VERSION_TABLE} table: it is not "
            "a store occusim wrote. Use another database (or schema), or restore the missing tables."
        )
    return bool(found)


def migration_scripts() -> ScriptDirectory:
    """Alembic's view of the migrations (for tools and tests; imports Alembic)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(MIGRATIONS))


def _release() -> str:
    try:
        return version("occusim")
    except PackageNotFoundError:
        return "(not installed)"
