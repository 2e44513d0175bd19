"""The HTTP server (``kbmem serve``): the FastAPI app of :mod:`kbmem.interfaces.app` on
uvicorn, with the MCP endpoint at ``/mcp``, on one listening socket.

:class:`MemoryServer` binds its socket when it is made (so a port in use is an ``OSError``
there, as with any server), runs uvicorn on its own event loop in :meth:`serve_forever`
(any thread), and stops from any thread with :meth:`shutdown`; :meth:`server_close` commits
every tenant's open chats. Chats left open by a killed server are committed when the next one
starts; chats idle for ``chat_idle_seconds`` are closed by a background thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn

from kbmem.errors import ValidationError
from kbmem.interfaces.app import ApiState, create_app
from kbmem.interfaces.limits import (
    MAX_CONNECTIONS,
    PER_CLIENT,
    REQUEST_DEADLINE_S,
    ConnectionLimits,
    GuardedProtocol,
)
from kbmem.interfaces.mcp_sdk.http import McpHttp
from kbmem.interfaces.service import (
    CHAT_IDLE_SECONDS,
    Memory,
    close_idle_chats_until,
    recover_chats,
)
from kbmem.interfaces.summit import gam_enabled
from kbmem.interfaces.tokens import TokenStore
from kbmem.store.repository import KnowledgeBase
from kbmem.textutil import printable

LOOPS = ("auto", "uvloop", "asyncio")


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop the server runs on, as ``KBMEM_HTTP_LOOP`` says: ``auto`` (the
    default) takes uvloop's where it is installed (a dependency on every platform but
    Windows), as ``uvicorn --loop auto`` does, else asyncio's own (None); ``uvloop`` or
    ``asyncio`` insist on one (an operator's way back should uvloop misbehave somewhere).
    uvloop's socket and timer handling in C took a third off what HTTP adds to a search
    (docs/benchmarks.md)."""
    choice = os.environ.get("KBMEM_HTTP_LOOP", "").strip().lower() or "auto"
    if choice not in LOOPS:
        raise ValidationError(
            f"{printable(choice)!r} is not an event loop kbmem knows: {', '.join(LOOPS)}",
            "KBMEM_HTTP_LOOP",
        )
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise ValidationError(
                "uvloop is asked for but not installed", "KBMEM_HTTP_LOOP"
            ) from None
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


class _Uvicorn(uvicorn.Server):
    """uvicorn's server without its signal handlers: the owner (``kbmem serve``, a test)
    decides when to stop, with :meth:`MemoryServer.shutdown`."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class MemoryServer:
    """The server: one :class:`Memory` per tenant, opened on first use and shared by the
    ``/v1`` routes, the Summit routes and ``/mcp``."""

    # The limits of kbmem.interfaces.limits; a test's subclass may lower them.
    max_connections = MAX_CONNECTIONS
    per_client = PER_CLIENT
    socket_timeout = REQUEST_DEADLINE_S

    def __init__(
        self,
        address: tuple[str, int],
        kb: KnowledgeBase,
        model: str | None = None,
        chat_idle_seconds: float = CHAT_IDLE_SECONDS,
    ):
        self.loop_factory = event_loop_factory()  # a bad KBMEM_HTTP_LOOP fails here, at start
        self.kb = kb
        self.model = model
        self.tokens = TokenStore(kb.state_dir)
        self.gam_enabled = gam_enabled(kb)  # read once: `kbmem serve` says which way it is
        # Room for the largest session the memorizer takes, as JSON (escapes can double it).
        max_session = int(kb.settings.section("memorizer")["max_session_bytes"])
        self.max_body = 2 * max_session + 1024 * 1024
        self.chat_idle_seconds = chat_idle_seconds
        self.state = ApiState(kb, model, self.tokens, self.gam_enabled, self.max_body)
        self.mcp = McpHttp(kb, model, tokens=self.tokens, open_memory=self.state.memory)
        self.app = create_app(self.state, self.mcp)
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        # IPPROTO_TCP named, not left 0: asyncio turns Nagle's algorithm off only on sockets
        # that say they are TCP, and with it on, every answer (headers and body are two
        # writes) waited 40 ms for the client's delayed ACK (kbmem bench api, docs).
        self.socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.socket.bind(address)
            self.socket.listen(128)
        except OSError:
            self.socket.close()
            raise
        self.server_address: tuple[Any, ...] = self.socket.getsockname()
        self.limits = ConnectionLimits(
            max_connections=self.max_connections,
            per_client=self.per_client,
            deadline=self.socket_timeout,
        )
        config = uvicorn.Config(
            self.app,
            http=GuardedProtocol.for_limits(self.limits),
            lifespan="on",
            log_config=None,
            access_log=False,  # the app logs each request, without its query string
            server_header=False,
            date_header=False,
            timeout_keep_alive=5,
            timeout_graceful_shutdown=10,
        )
        self._uvicorn = _Uvicorn(config)
        self.loop: asyncio.AbstractEventLoop | None = None  # serve_forever's, while it runs
        self._stopped = threading.Event()
        self._stopped.set()
        self._closed = False
        self._stop_reaper = threading.Event()
        recover_chats(kb)
        self._reaper = threading.Thread(
            target=close_idle_chats_until,
            args=(self._stop_reaper, self.state.open_memories, chat_idle_seconds),
            name="kbmem-idle-chats",
            daemon=True,
        )
        self._reaper.start()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def memory(self, tenant: str) -> Memory:
        return self.state.memory(tenant)

    def serve_forever(self) -> None:
        """Serve until :meth:`shutdown` (from another thread or a signal handler), on
        uvloop's event loop where it is installed (see :func:`event_loop_factory`)."""
        self._stopped.clear()
        try:
            with asyncio.Runner(loop_factory=self.loop_factory) as runner:
                self.loop = runner.get_loop()
                runner.run(self._uvicorn.serve(sockets=[self.socket]))
        finally:
            self._stopped.set()

    @property
    def started(self) -> bool:
        return bool(self._uvicorn.started)

    def shutdown(self) -> None:
        """Stop serving (answers under way get ``timeout_graceful_shutdown`` to finish) and
        wait until :meth:`serve_forever` has returned."""
        self._uvicorn.should_exit = True
        self._stopped.wait()

    def close_memories(self) -> None:
        self._stop_reaper.set()
        self.state.close_memories()

    def server_close(self) -> None:
        """Commit every tenant's open chats and release the socket."""
        if self._closed:
            return
        self._closed = True
        self.close_memories()
        self.socket.close()
