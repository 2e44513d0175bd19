"""The MCP server over Streamable HTTP, for the HTTP API to mount at ``/mcp``.

Every request presents ``Authorization: Bearer <token>``, and the token decides the tenant
exactly as for ``/v1`` (one reading of the header for both, in
:mod:`kbmem.interfaces.envelope`): a request without a valid one is answered 401 (several
``Authorization`` headers 400) with the API's JSON error before the SDK sees it, and each
tool call acts for the tenant of the token that sent it, so a session id gives nobody
another tenant's memory.

Starlette does not run a mounted app's lifespan, so the mounting app runs
:meth:`McpHttp.lifespan` in its own (it starts the SDK's session manager and, at the end,
closes the tenants' memories). :meth:`McpHttp.standalone` wraps both in one Starlette app,
for serving it alone (tests, the benchmark).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from kbmem.errors import KbmemError
from kbmem.interfaces.envelope import ApiError, send_error, tenant_of
from kbmem.interfaces.mcp_sdk.server import READY_WAIT, KbmemMcp
from kbmem.interfaces.service import Memory
from kbmem.interfaces.tokens import TokenStore
from kbmem.store.repository import KnowledgeBase


class McpHttp:
    """The MCP endpoint for every tenant of one knowledge base (one :class:`Memory` per
    tenant, opened on its first request; each prepares its index in the background)."""

    def __init__(
        self,
        kb: KnowledgeBase,
        model: str | None = None,
        ready_wait: float = READY_WAIT,
        tokens: TokenStore | None = None,
        open_memory: Callable[[str], Memory] | None = None,
    ):
        """``open_memory``: the tenants' memories of the app this endpoint is mounted on,
        shared with its other routes (that app closes them); without it, its own."""
        self.kb = kb
        self._open_memory = open_memory
        self.model = model
        self.tokens = tokens if tokens is not None else TokenStore(kb.state_dir)
        self._memories: dict[str, Memory] = {}
        self._lock = threading.Lock()
        self.handlers = KbmemMcp(self.memory_for, None, ready_wait)
        self.manager = StreamableHTTPSessionManager(app=self.handlers.server)
        self._sdk_app = StreamableHTTPASGIApp(self.manager)

    def memory(self, tenant: str) -> Memory:
        if self._open_memory is not None:
            return self._open_memory(tenant)
        with self._lock:
            memory = self._memories.get(tenant)
            if memory is None:
                memory = self._memories[tenant] = Memory(self.kb, tenant, self.model)
        return memory

    def memory_for(self, ctx: ServerRequestContext[Any, Any]) -> Memory:
        """The memory of the tenant whose token sent this request."""
        headers = getattr(ctx.request, "headers", None)
        try:
            tenant = tenant_of(self.tokens, headers.getlist("authorization") if headers else [])
        except ApiError:  # the endpoint let it through, so the token was just revoked
            raise KbmemError("the token is not valid (revoked?)") from None
        return self.memory(tenant)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app: refuses a request without a valid token, passes the rest on."""
        if scope["type"] != "http":
            await self._sdk_app(scope, receive, send)
            return
        authorization = Headers(scope=scope).getlist("authorization")
        try:
            tenant = await anyio.to_thread.run_sync(tenant_of, self.tokens, authorization)
        except ApiError as refused:
            await send_error(send, refused)
            return
        self.memory(tenant)  # opened, and its index prepared, from the first request on
        self.handlers.readiness(self.memory(tenant))
        await self._sdk_app(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Run the SDK's session manager; at the end, stop index builds and close the
        memories (committing open chats)."""
        try:
            async with self.manager.run():
                yield
        finally:
            await anyio.to_thread.run_sync(self.close)

    def close(self) -> None:
        self.handlers.close()
        with self._lock:
            memories = list(self._memories.values())
            self._memories.clear()
        for memory in memories:
            memory.close()

    def standalone(self, path: str = "/mcp") -> Starlette:
        """This endpoint alone, mounted at ``path``, in an app that runs its lifespan."""

        @contextlib.asynccontextmanager
        async def lifespan(_app: Starlette) -> AsyncIterator[None]:
            async with self.lifespan():
                yield

        return Starlette(routes=[Route(path, endpoint=self)], lifespan=lifespan)
