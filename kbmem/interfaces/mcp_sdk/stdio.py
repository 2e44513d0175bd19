"""``kbmem mcp``: one tenant's memory served over the process's stdin and stdout.

Stdout carries nothing but protocol: the SDK's stdio transport keeps a private copy of the
real stdout for the protocol and points file descriptor 1 at stderr (and 0 at the null
device) while it serves, so a library that prints (a progress bar, a warning, litellm on
import) or a child process (git) cannot corrupt the client's stream; ``sys.stdout`` is
pointed at stderr too, for Python code that prints before the transport starts.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading

import anyio
from mcp.server.stdio import stdio_server

from kbmem.errors import KbmemError
from kbmem.interfaces.mcp_sdk.server import READY_WAIT, KbmemMcp
from kbmem.interfaces.service import Memory, close_idle_chats_until, recover_chats

log = logging.getLogger(__name__)


def build(memory: Memory, ready_wait: float = READY_WAIT) -> KbmemMcp:
    """The server for one memory, its index preparation started at once."""
    handlers = KbmemMcp(lambda _ctx: memory, memory.tenant, ready_wait)
    handlers.readiness(memory)
    return handlers


async def _serve(handlers: KbmemMcp) -> None:
    server = handlers.server
    async with stdio_server() as (read_stream, write_stream):
        # After the transport has claimed the real stdout (it serves the protocol only from
        # a descriptor it finds behind sys.stdout): Python's own prints go to stderr too.
        real_stdout, sys.stdout = sys.stdout, sys.stderr
        with anyio.CancelScope() as scope:

            async def on_signals() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for _ in signals:
                        scope.cancel()
                        return

            async with anyio.create_task_group() as tg:
                tg.start_soon(on_signals)
                try:
                    await server.run(
                        read_stream, write_stream, server.create_initialization_options()
                    )
                finally:
                    sys.stdout = real_stdout
                tg.cancel_scope.cancel()


def serve_stdio(memory: Memory) -> int:
    """Serve ``memory`` on stdin and stdout until EOF, SIGTERM or SIGINT, then close it
    (committing every open chat's pending turns)."""
    sys.stdout.flush()
    recover_chats(memory.kb)  # turns a killed run left in the journal
    idle_stop = threading.Event()
    threading.Thread(
        target=close_idle_chats_until,
        args=(idle_stop, lambda: [memory]),
        name="kbmem-idle-chats",
        daemon=True,
    ).start()
    handlers = build(memory)
    print(f"kbmem: MCP server for tenant {memory.tenant!r} on stdio", file=sys.stderr, flush=True)
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        anyio.run(_serve, handlers)
    print("kbmem: MCP server stopping; committing open chats", file=sys.stderr, flush=True)
    idle_stop.set()
    try:
        handlers.close()
        memory.close()
    except KbmemError as exc:
        print(f"kbmem: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0
