"""Alembic's environment for the store's migrations.

`Store.init()` runs them on its own connection (passed in `config.attributes`). To write a new revision,
compare a store at the current head with the tables: `alembic -x url=sqlite:///occusim.db revision
--autogenerate --rev-id 0002 -m "what changed"`, then review the script (SQLite needs batch operations).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from occusim.server._store_schema import VERSION_TABLE
from occusim.server._tables import metadata


def _migrate(connection: Connection, schema: str | None) -> None:
    context.configure(connection=connection, target_metadata=metadata, version_table=VERSION_TABLE,
                      version_table_schema=schema, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


_connection = context.config.attributes.get("connection")
if _connection is not None:
    _migrate(_connection, context.config.attributes.get("schema"))
else:
    _url = context.get_x_argument(as_dictionary=True).get("url")
    if not _url:
        raise SystemExit("name the store to compare with: alembic -x url=sqlite:///occusim.db ...")
    with create_engine(_url).connect() as _own:
        _migrate(_own, None)
        _own.commit()
