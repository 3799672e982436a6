"""Connections that send nothing, drip their headers or stall their body are closed after the service's
header and body deadlines; kept-alive connections between calls and prompt requests are untouched."""

from __future__ import annotations

import http.client
import socket
import time

import pytest

from tests.helpers import LiveServer, hosted_settings

DEADLINES = {"header_timeout_seconds": 1.0, "body_timeout_seconds": 1.0, "keep_alive_seconds": 5.0}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with LiveServer(hosted_settings(tmp_path_factory.mktemp("deadlines"), **DEADLINES)) as live:
        yield live


def _closed_within(connection: socket.socket, seconds: float) -> float:
    """Seconds until the server closes `connection` (reading whatever it answers first); fails past `seconds`."""
    started = time.monotonic()
    connection.settimeout(seconds)
    while connection.recv(65536):
        pass
    return time.monotonic() - started


def _connect(server: LiveServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=5)


def test_an_idle_connection_is_closed(server):
    with _connect(server) as idle:
        assert 0.8 < _closed_within(idle, 5) < 3


def test_headers_dripped_byte_by_byte_do_not_keep_the_connection(server):
    with _connect(server) as slow:
        started = time.monotonic()
        closed = False
        for byte in b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 40:
            try:
                slow.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.1)
        if not closed:
            _closed_within(slow, 5)
        assert time.monotonic() - started < 4.5


def test_a_body_that_stalls_is_cut(server):
    with _connect(server) as stalled:
        stalled.sendall(b"POST /v1/judge HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        b"Content-Length: 1000\r\n\r\n{\"task\": ")
        assert _closed_within(stalled, 5) < 3


def test_a_kept_alive_connection_serves_a_call_after_a_pause_longer_than_the_header_deadline(server):
    kept = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        kept.request("GET", "/healthz")
        first = kept.getresponse()
        assert first.status == 200 and first.read()
        connection = kept.sock
        time.sleep(2)
        kept.request("GET", "/healthz")
        second = kept.getresponse()
        assert second.status == 200 and second.read()
        assert kept.sock is connection, "the same connection, kept alive"
    finally:
        kept.close()
