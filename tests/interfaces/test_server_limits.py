"""Issue 35's server items that the HTTP layer owns: a token never reaches the log, a request
with two ``Authorization`` headers is refused rather than read by its first one, and slow or
greedy clients (a slowloris, large bodies) cannot deny service to the others. A real
server on a loopback port, spoken to with http.client."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvloop

from kbmem.errors import ValidationError
from kbmem.interfaces.limits import JOIN_BYTES, MAX_HEAD_BYTES, HeadWithBody
from kbmem.interfaces.routes.common import MAX_LARGE_REQUESTS
from kbmem.interfaces.server import MemoryServer, event_loop_factory
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
    with caplog.at_level(logging.INFO, logger="kbmem.interfaces.app"):
        status = _get(served, f"/v1/pages?token={token}&limit=2", [])
    assert status in (400, 401)
    assert caplog.records, "the request is logged"
    assert token not in caplog.text and token[8:] not in caplog.text


# -- slow and greedy clients (issue 35, items 2 and 3) -----------------------------------------


def _connect(server: MemoryServer, source: str = "127.0.0.1") -> socket.socket:
    return socket.create_connection(
        server.server_address[:2], timeout=10, source_address=(source, 0)
    )


def _read_all(sock: socket.socket) -> bytes:
    """An answer that ends the connection, whole."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def _health(server: MemoryServer) -> int:
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=5)
    try:
        conn.request("GET", "/v1/health")
        return conn.getresponse().status
    finally:
        conn.close()


def test_a_slowloris_cannot_hold_the_slots(example_kb: KnowledgeBase) -> None:
    """64 connections from one address trickling a byte a second: past the per-client cap
    they are turned away at once, the ones let in are dropped at the request deadline, and a
    client from another address is answered throughout."""

    class Deadline(MemoryServer):
        socket_timeout = 3.0

    server = Deadline(("127.0.0.1", 0), example_kb)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    slow: list[socket.socket] = []
    try:
        for _ in range(64):
            sock = _connect(server, "127.0.0.2")
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
            slow.append(sock)
        time.sleep(0.3)
        turned_away = 0
        for sock in slow:
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                if sock.recv(4096).startswith(b"HTTP/1.1 503"):
                    turned_away += 1
        assert turned_away == 64 - Deadline.per_client
        answered = []
        started = time.monotonic()
        while time.monotonic() - started < 5:  # past the deadline of the trickling ones
            for sock in slow:
                with contextlib.suppress(OSError):
                    sock.send(b"X")
            answered.append(_health(server))
            time.sleep(0.5)
        assert answered and set(answered) == {200}
        # Every trickling connection has been closed by the server.
        for sock in slow:
            sock.setblocking(True)
            sock.settimeout(5)
            with contextlib.suppress(ConnectionResetError):
                data = sock.recv(4096)
                assert data == b"" or data.startswith(b"HTTP/1.1 503"), data
    finally:
        for sock in slow:
            sock.close()
        server.shutdown()
        server.server_close()


def test_the_token_and_the_size_are_checked_before_the_body_is_read(served: MemoryServer) -> None:
    token, _ = TokenStore(served.kb.state_dir).create("default", "test")
    for auth, length, want in (
        ("Bearer kbm_wrong", 100_000_000, b"HTTP/1.1 401"),
        (f"Bearer {token}", served.max_body + 1, b"HTTP/1.1 413"),
    ):
        with _connect(served) as sock:
            sock.sendall(
                b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + f"Authorization: {auth}\r\nContent-Length: {length}\r\n\r\n".encode()
                + b'{"turns": ['  # and no more: the answer comes without the rest
            )
            answer = sock.recv(4096)
            assert answer.startswith(want), answer
            assert b"connection: close" in answer.lower()


def test_large_requests_are_taken_a_few_at_a_time(served: MemoryServer) -> None:
    token, _ = TokenStore(served.kb.state_dir).create("default", "test")
    head = (
        b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Authorization: Bearer {token}\r\nContent-Length: {3 * 1024 * 1024}\r\n\r\n".encode()
    )
    held = [_connect(served) for _ in range(MAX_LARGE_REQUESTS)]
    try:
        for sock in held:  # each sends part of a large body, and holds its slot
            sock.sendall(head + b'{"turns": [' + b" " * 100_000)
        time.sleep(0.5)
        with _connect(served) as third:
            third.sendall(head)
            answer = _read_all(third)
        assert answer.startswith(b"HTTP/1.1 503") and b"large requests" in answer
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.5)  # the slots come back once the held ones are gone
    with _connect(served) as sock:
        sock.sendall(head + b" " * (3 * 1024 * 1024))
        answer = _read_all(sock)
        assert answer.startswith(b"HTTP/1.1 400") and b"is empty" in answer


def test_an_answers_head_goes_out_with_its_body() -> None:
    """HeadWithBody over a real socket: a write is held until the next write of the same
    event-loop step, which takes it along in one send, or until the step ends; closing
    sends what is held, aborting drops it."""

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        theirs.setblocking(False)
        transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, ours)
        wrapped = HeadWithBody(transport, loop)

        def received() -> bytes:
            try:
                return theirs.recv(1 << 20)
            except BlockingIOError:
                return b""

        wrapped.write(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\n")
        assert received() == b""  # held: the body may follow in this step
        assert wrapped.get_write_buffer_size() > 0
        wrapped.write(b"body")
        await asyncio.sleep(0.05)
        assert received() == b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nbody"
        wrapped.write(b"event: trace\n\n")  # a streamed answer's part, alone in its step
        await asyncio.sleep(0.05)
        assert received() == b"event: trace\n\n"
        large = b"x" * (JOIN_BYTES + 1)
        wrapped.write(b"head")
        wrapped.write(large)  # not copied to join the head: two sends, in order
        await asyncio.sleep(0.05)
        got = b""
        for _ in range(500):  # at most 5 s
            got += received()
            if len(got) >= len(large) + 4:
                break
            await asyncio.sleep(0.01)
        assert got == b"head" + large
        wrapped.write(b"last words")
        wrapped.close()
        await asyncio.sleep(0.05)
        assert received() == b"last words"
        theirs.close()

    asyncio.run(scenario())


def test_a_head_that_never_ends_is_refused_once_past_its_bound(served: MemoryServer) -> None:
    """llhttp bounds no head: the protocol counts a head's bytes as they come and answers
    414 (still in the request line) or 431 (in the headers) past MAX_HEAD_BYTES, in JSON,
    without waiting for an end that a hostile client never sends."""
    for start, status in (
        (b"GET /v1/pages/" + b"x" * (MAX_HEAD_BYTES + 10), 414),
        (b"GET /v1/pages HTTP/1.1\r\nX-Pad: " + b"y" * (MAX_HEAD_BYTES + 10), 431),
        # The same heads whole, in one read: refused when the head ends.
        (b"GET /v1/pages/" + b"x" * (MAX_HEAD_BYTES + 10) + b" HTTP/1.1\r\n\r\n", 414),
        (b"GET /v1/pages HTTP/1.1\r\nX-Pad: " + b"y" * (MAX_HEAD_BYTES + 10) + b"\r\n\r\n", 431),
    ):
        with socket.create_connection(served.server_address[:2], timeout=30) as sock:
            sock.sendall(start)  # the first two: no end of line, no end of head
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(f"HTTP/1.1 {status} ".encode()), head
        assert json.loads(body)["error"]["code"] == "http"


def test_what_the_parser_refuses_is_said_in_json(served: MemoryServer) -> None:
    for request, status, said in (
        (b"GET /v1/health HTTP/1.1\r\nX-Bad: a\x00b\r\n\r\n", 400, "header"),
        (b"BREW /v1/health HTTP/1.1\r\nHost: x\r\n\r\n", 501, "method"),
    ):
        with socket.create_connection(served.server_address[:2], timeout=30) as sock:
            sock.sendall(request)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(f"HTTP/1.1 {status} ".encode()), head
        assert b"connection: close" in head.lower()
        assert said in json.loads(body)["error"]["message"].lower()


def test_the_server_answers_on_uvloops_event_loop(served: MemoryServer) -> None:
    """uvloop is a dependency where it builds (not Windows), and the server runs on its
    loop: the loop a request is answered on is uvloop's, as the server says."""
    assert _health(served) == 200
    assert isinstance(served.loop, uvloop.Loop)
    assert event_loop_factory() is uvloop.new_event_loop


@pytest.mark.parametrize(
    ("setting", "loop"), [("asyncio", asyncio.BaseEventLoop), ("UVloop ", uvloop.Loop)]
)
def test_kbmem_http_loop_chooses_the_loop(
    example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, setting: str, loop: type
) -> None:
    """An operator can insist on either loop (asyncio's is the way back should uvloop
    misbehave somewhere); the server answers on the one chosen."""
    monkeypatch.setenv("KBMEM_HTTP_LOOP", setting)
    server = MemoryServer(("127.0.0.1", 0), example_kb)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert _health(server) == 200
        assert isinstance(server.loop, loop)
        assert isinstance(server.loop, uvloop.Loop) == (loop is uvloop.Loop)
    finally:
        server.shutdown()
        server.server_close()


def test_an_unknown_kbmem_http_loop_is_refused_when_the_server_is_made(
    example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KBMEM_HTTP_LOOP", "trio")
    with pytest.raises(ValidationError, match=r"KBMEM_HTTP_LOOP: 'trio' is not an event loop"):
        MemoryServer(("127.0.0.1", 0), example_kb)
