"""Query values (viewer links, codes) are kept out of uvicorn's access log."""

from __future__ import annotations

import logging

from hypothesis import given
from hypothesis import strategies as st

from occusim.rest import redact_access_log, without_query_values
from occusim.rest._access_log import ACCESS_LOGGER, RedactedQueries


def test_values_are_replaced_and_names_kept():
    assert without_query_values("/v1/view/open?access=abc.def&episode=ep-1") == "/v1/view/open?access=***&episode=***"
    assert without_query_values("/v1/view/") == "/v1/view/"
    assert without_query_values("/x?flag&token=t") == "/x?flag&token=***"


@given(st.text(alphabet=st.characters(blacklist_characters="&#=?"), min_size=1, max_size=40))
def test_no_value_survives(value):
    assert without_query_values(f"/v1/view/open?a=1&access={value}") == "/v1/view/open?a=***&access=***"


def test_the_filter_rewrites_access_records_once_installed():
    redact_access_log()
    redact_access_log()
    logger = logging.getLogger(ACCESS_LOGGER)
    assert sum(isinstance(f, RedactedQueries) for f in logger.filters) == 1
    record = logging.LogRecord(ACCESS_LOGGER, logging.INFO, "h11", 1, '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:5", "GET", "/v1/view/open?access=SECRET", "1.1", 303), None)
    assert all(f.filter(record) for f in logger.filters)
    assert "SECRET" not in record.getMessage() and "access=***" in record.getMessage()
