"""Access logs without secrets: query values (viewer links, OAuth codes) never reach uvicorn's access log."""

from __future__ import annotations

import logging
import re

ACCESS_LOGGER = "uvicorn.access"
# `name=value` pairs of a query string; the values are replaced, the names kept to show what was asked.
_QUERY_VALUE = re.compile(r"([?&][^=&#]*)=[^&#]*")


def without_query_values(path: str) -> str:
    """`/v1/view/open?access=SECRET&episode=ep-1` as `/v1/view/open?access=***&episode=***`."""
    return _QUERY_VALUE.sub(r"\1=***", path) if "?" in path else path


class RedactedQueries(logging.Filter):
    """Rewrites the request line of uvicorn's access records (client, method, path, version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            record.args = (args[0], args[1], without_query_values(args[2]), args[3], args[4])
        return True


def redact_access_log() -> None:
    """Install the filter on uvicorn's access logger (once), after uvicorn has configured its logging."""
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, RedactedQueries) for f in logger.filters):
        logger.addFilter(RedactedQueries())
