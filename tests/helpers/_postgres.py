"""The PostgreSQL database that store tests use: OCCUSIM_TEST_POSTGRES_URL, or the local server."""

from __future__ import annotations

import os

POSTGRES_URL = os.environ.get("OCCUSIM_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")


async def drop_schema(schema: str, url: str = POSTGRES_URL) -> None:
    """Drop a PostgreSQL schema a test made, with everything in it."""
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await engine.dispose()
