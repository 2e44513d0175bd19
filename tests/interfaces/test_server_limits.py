"""Issue 35's server items that the HTTP layer owns: a token never reaches the log, and a
request with two ``Authorization`` headers is refused rather than read by its first one. A real
server on a loopback port, spoken to with http.client."""

from __future__ import annotations

import http.client
import logging
import threading
from collections.abc import Iterator

import pytest

from kbmem.interfaces.http import MemoryServer
from kbmem.interfaces.tokens import TokenStore
from kbmem.store.repository import KnowledgeBase


@pytest.fixture
def served(example_kb: KnowledgeBase) -> Iterator[MemoryServer]:
    server = MemoryServer(("127.0.0.1", 0), example_kb)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _get(server: MemoryServer, path: str, headers: list[tuple[str, str]]) -> int:
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(str(host), port, timeout=30)
    conn.putrequest("GET", path)
    for name, value in headers:
        conn.putheader(name, value)
    conn.endheaders()
    status = conn.getresponse().status
    conn.close()
    return status


def test_two_authorization_headers_are_refused(served: MemoryServer) -> None:
    good, _ = TokenStore(served.kb.state_dir).create("default", "test")
    assert _get(served, "/v1/pages", [("Authorization", f"Bearer {good}")]) == 200
    both = [("Authorization", f"Bearer {good}"), ("Authorization", "Bearer kbm_other")]
    assert _get(served, "/v1/pages", both) == 400


def test_a_token_in_the_query_string_is_not_logged(
    served: MemoryServer, caplog: pytest.LogCaptureFixture
) -> None:
    token, _ = TokenStore(served.kb.state_dir).create("default", "test")
    with caplog.at_level(logging.INFO, logger="kbmem.interfaces.http"):
        status = _get(served, f"/v1/pages?token={token}&limit=2", [])
    assert status in (400, 401)
    assert caplog.records, "the request is logged"
    assert token not in caplog.text and token[8:] not in caplog.text
