"""What a client must not be able to do to the HTTP server before it has even been read: hold
a connection slot with a slow trickle of headers, open more connections than its share, or
get an answer other than JSON for a request the HTTP parser refuses.

:class:`GuardedProtocol` is uvicorn's httptools protocol (llhttp, the parser of Node.js) with
these additions (the reason for a protocol class rather than uvicorn's own knobs is in
docs/decisions/http-limits.md):

- **Connection caps**: at most ``max_connections`` open connections, and at most
  ``per_client`` from one address, counted as each connection is made (before any byte of
  the request, so before authentication); one over either cap is answered 503 and closed.
- **A whole-request deadline**: the request's head and body must have arrived within
  ``deadline`` seconds of the connection being made (or of the previous answer on a
  keep-alive connection); otherwise the connection is closed, whatever the client was still
  sending. uvicorn's and http.server's timeouts are per read, so a byte a second never
  trips them.
- **Parser refusals as JSON** (``{"error": {"code": "http", ...}}``, as every other error):
  414 for a request line longer than ``MAX_HEAD_BYTES``, 431 for headers, 501 for a method
  the parser does not know, 400 for the rest (a Content-Length of ``+17``, two that differ).
- **An answer's head sent with its body** (:class:`HeadWithBody`): one ``send`` where
  uvicorn makes two.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import httptools
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

from kbmem.interfaces.envelope import error_json

MAX_HEAD_BYTES = 64 * 1024  # a request line or header block, as http.server allowed
MAX_CONNECTIONS = 64  # open connections; beyond this a client is turned away with 503
PER_CLIENT = 16  # open connections from one address, counted before authentication
# A request's head and body must arrive within this (a slow trickle is dropped); the answer
# may take as long as the work does.
REQUEST_DEADLINE_S = 30.0


@dataclass
class ConnectionLimits:
    """The caps and the deadline, and the connections counted per client address (touched
    only on the server's event loop, so without a lock)."""

    max_connections: int = MAX_CONNECTIONS
    per_client: int = PER_CLIENT
    deadline: float = REQUEST_DEADLINE_S
    open: int = 0
    by_client: dict[str, int] = field(default_factory=dict)


# A held head is sent with the write after it up to this size; a larger body goes in its own
# write rather than be copied to join the head.
JOIN_BYTES = 64 * 1024


class HeadWithBody(asyncio.Transport):
    """A connection's transport that sends an answer's head together with its body.

    uvicorn writes a response's status line and headers, then its body, as two writes, and
    the socket sends each at once: two packets, two system calls, and a client woken twice
    per answer (in one process, each wake-up also hands the GIL over and back). Here a write
    is held until the next write of the same step of the event loop, which takes it along,
    or until the end of that step (a streamed answer's head is not delayed further). What is
    held is sent first by :meth:`close` and :meth:`write_eof`, and dropped by :meth:`abort`;
    everything else is the transport's own."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop):
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._held = b""

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        held, self._held = self._held, b""
        if held:
            if len(data) <= JOIN_BYTES:
                self._transport.write(held + bytes(data))
                return
            self._transport.write(held)
            self._transport.write(data)
            return
        self._held = bytes(data)
        self._loop.call_soon(self.flush)

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def flush(self) -> None:
        held, self._held = self._held, b""
        if held and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = b""
        self._transport.abort()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + len(self._held)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()


class _Refused(Exception):
    """A request refused from a parser callback, with its status."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class GuardedProtocol(HttpToolsProtocol):
    limits = ConnectionLimits()  # replaced per server (see for_limits)

    @classmethod
    def for_limits(cls, limits: ConnectionLimits) -> type[GuardedProtocol]:
        """This protocol bound to one server's limits (uvicorn instantiates the class)."""
        return type("GuardedProtocol", (cls,), {"limits": limits})

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._deadline: asyncio.TimerHandle | None = None
        self._counted: str | None = None
        self._in_head = True  # the bytes coming are (still) a request's head
        self._head_bytes = 0  # ...and this many of them have come
        self._line_done = False  # ...and the request line among them has ended
        self._request_in = False  # the whole request (head and body) has come

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        transport = HeadWithBody(transport, self.loop)
        super().connection_made(transport)
        limits = self.limits
        address = self.client[0] if self.client else ""
        if (
            limits.open >= limits.max_connections
            or limits.by_client.get(address, 0) >= limits.per_client
        ):
            self._refuse(503, "too many connections; try again", code="busy", retry=True)
            return
        limits.open += 1
        limits.by_client[address] = limits.by_client.get(address, 0) + 1
        self._counted = address
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._counted is not None:
            limits, address = self.limits, self._counted
            self._counted = None
            limits.open -= 1
            left = limits.by_client.get(address, 1) - 1
            if left > 0:
                limits.by_client[address] = left
            else:
                limits.by_client.pop(address, None)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """uvicorn's, with the parser's refusal said as it was found (uvicorn's own says only
        "Invalid HTTP request") and a head that grows past MAX_HEAD_BYTES refused (llhttp
        puts no bound on it)."""
        if self._counted is None:  # refused at connection_made: nothing of it is read
            return
        self._unset_keepalive_if_required()
        if self._in_head:
            self._head_bytes += len(data)
            self._line_done = self._line_done or b"\n" in data
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserInvalidMethodError:
            self._refuse(501, "Unsupported method")
            return
        except httptools.HttpParserError as exc:
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, _Refused):  # raised by a callback of ours
                self._refuse(cause.status, str(cause))
            else:
                self._refuse(400, str(exc) or "the request could not be read")
            return
        except httptools.HttpParserUpgrade:
            # No protocol to upgrade to: the request is answered as HTTP (as uvicorn does).
            self._unsupported_upgrade_warning()
            return
        if self._in_head and self._head_bytes > MAX_HEAD_BYTES:
            if self._line_done:
                self._refuse(431, "the request's headers are too long")
            else:
                self._refuse(414, "the request line (the URL) is too long")

    def on_headers_complete(self) -> None:
        # A head that came whole in one read was not counted yet (llhttp's URL parser refuses
        # one over 64 KiB as a failed callback, uvicorn's 400).
        self._in_head = False
        if len(self.url) > MAX_HEAD_BYTES:
            raise _Refused(414, "the request line (the URL) is too long")
        if sum(len(k) + len(v) + 4 for k, v in self.headers) > MAX_HEAD_BYTES:
            raise _Refused(431, "the request's headers are too long")
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._request_in = True  # the app's time now
        # What comes next is the next request's head.
        self._in_head, self._head_bytes, self._line_done = True, 0, False
        self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._request_in = False
            self._arm()  # the next request on this connection has the same deadline

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.limits.deadline, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if not self._request_in and not self.transport.is_closing():
            self.logger.info("dropped a client that took too long to send its request")
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        self._refuse(400, msg)

    def _refuse(self, status: int, text: str, code: str = "http", retry: bool = False) -> None:
        """Answer ``status`` with the JSON error and close, unless an answer has begun on
        this connection (then only close)."""
        if self.cycle is None or not self.cycle.response_started:
            body = error_json(code, text)
            self.transport.write(
                STATUS_LINE[status]
                + b"content-type: application/json\r\n"
                + (b"retry-after: 1\r\n" if retry else b"")
                + b"connection: close\r\n"
                + f"content-length: {len(body)}\r\n\r\n".encode()
                + body
            )
        self.transport.close()
