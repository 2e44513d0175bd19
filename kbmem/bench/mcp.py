"""``kbmem bench mcp``: time to a ``research`` result through the MCP SDK's own client, over
stdio (``kbmem mcp`` in a new process) and over Streamable HTTP (:class:`McpHttp` served by
uvicorn on a loopback port), against the same research in process.

On a fresh copy of the example knowledge base, with no index yet:

(a) a new stdio server on it: when the first progress notification arrived, how long each
    research call took (none may reach a client's 60 s timeout) and when the first briefing
    came (calls answered "indexing" are retried);
(b) a new stdio server on the now indexed knowledge base: time from starting the process to
    the first briefing;
(c) warm calls: ``--requests`` research questions each way, taken in turn so that every side
    sees the same machine: p50/p95, and each transport's p50 as a ratio of in process.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from kbmem.bench.chat import questions
from kbmem.bench.stats import percentile
from kbmem.errors import ValidationError
from kbmem.interfaces.service import Memory
from kbmem.interfaces.tokens import TokenStore
from kbmem.memorize.template import init_kb

CLIENT_TIMEOUT = 60.0  # what the MCP Inspector and most clients allow one call


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--requests", type=int, default=20, help="warm rounds (default 20)")


def _stdio_params(kb: Path) -> Any:
    from mcp import StdioServerParameters

    root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "kbmem", "--kb", str(kb), "mcp"],
        env={**os.environ, "PYTHONPATH": path},
    )


def run(requests: int = 20) -> dict[str, Any]:
    if requests < 1:
        raise ValidationError("must be at least 1", "--requests")
    import anyio

    asked = questions()
    with tempfile.TemporaryDirectory(prefix="kbmem-bench-mcp-") as tmp:
        kb = init_kb(Path(tmp) / "kb")
        tenant = kb.settings.data["default_tenant"]
        fresh = anyio.run(_fresh, kb.root, asked[0])
        new_process = anyio.run(_new_process, kb.root, asked[1 % len(asked)])
        warm = _warm(kb, tenant, asked, requests)
    return {"fresh": fresh, "new_process": new_process, "warm": warm, "requests": requests}


async def _fresh(kb: Path, question: str) -> dict[str, Any]:
    from mcp import Client

    started = time.monotonic()
    first_progress: list[float] = []
    calls: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if not first_progress:
            first_progress.append(time.monotonic() - call_started)

    async with Client(_stdio_params(kb), mode="legacy") as client:
        connected = time.monotonic() - started
        while True:
            call_started = time.monotonic()
            result = await client.call_tool(
                "research", {"request": question}, progress_callback=on_progress
            )
            calls.append(time.monotonic() - call_started)
            if not result.is_error:
                break
            await anyio_sleep(1.0)
    return {
        "connected_s": connected,
        "first_progress_s": first_progress[0] if first_progress else None,
        "longest_call_s": max(calls),
        "calls": len(calls),
        "first_result_s": time.monotonic() - started,
        "timed_out": any(c >= CLIENT_TIMEOUT for c in calls),
    }


async def anyio_sleep(seconds: float) -> None:
    import anyio

    await anyio.sleep(seconds)


async def _new_process(kb: Path, question: str) -> dict[str, Any]:
    from mcp import Client

    started = time.monotonic()
    async with Client(_stdio_params(kb), mode="legacy") as client:
        result = await client.call_tool("research", {"request": question})
        first = time.monotonic() - started
        if result.is_error:
            raise ValidationError(f"research over stdio failed: {result.content}", "mcp")
    return {"first_result_s": first}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _warm(kb: Any, tenant: str, asked: list[str], requests: int) -> dict[str, Any]:
    import anyio
    import uvicorn

    from kbmem.interfaces.mcp_sdk.http import McpHttp

    token, _ = TokenStore(kb.state_dir).create(tenant, "bench")
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(McpHttp(kb).standalone(), host="127.0.0.1", port=port, log_level="error")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    memory = Memory(kb, tenant)
    times: dict[str, list[float]] = {"in_process": [], "stdio": [], "http": []}

    async def rounds() -> None:
        import httpx2
        from mcp import Client
        from mcp.client.session import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        headers = {"Authorization": f"Bearer {token}"}
        async with (
            Client(_stdio_params(kb.root), mode="legacy") as stdio,
            httpx2.AsyncClient(headers=headers, timeout=300) as http_client,
            streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http_client) as (
                read,
                write,
            ),
            ClientSession(read, write) as http,
        ):
            await http.initialize()
            # Untimed: model, index and first-call costs of each side.
            memory.research(asked[0])
            await stdio.call_tool("research", {"request": asked[0]})
            await http.call_tool("research", {"request": asked[0]})
            for i in range(requests):
                q = asked[i % len(asked)]
                t = time.perf_counter()
                await anyio.to_thread.run_sync(memory.research, q)
                times["in_process"].append(time.perf_counter() - t)
                t = time.perf_counter()
                await stdio.call_tool("research", {"request": q})
                times["stdio"].append(time.perf_counter() - t)
                t = time.perf_counter()
                await http.call_tool("research", {"request": q})
                times["http"].append(time.perf_counter() - t)

    try:
        anyio.run(rounds)
    finally:
        server.should_exit = True
        thread.join(60)
        memory.close()
    figures: dict[str, dict[str, float | None]] = {
        k: {"p50_ms": percentile(v, 50) * 1000, "p95_ms": percentile(v, 95) * 1000}
        for k, v in times.items()
    }
    base = percentile(times["in_process"], 50)
    for k in ("stdio", "http"):
        figures[k]["ratio_p50"] = percentile(times[k], 50) / base if base else None
    return figures


def render(result: dict[str, Any]) -> str:
    f, n, w = result["fresh"], result["new_process"], result["warm"]
    progress = f["first_progress_s"]
    lines = [
        "kbmem bench mcp: time to a research result through the MCP SDK client",
        "(a) fresh knowledge base, no index, new stdio server:",
        f"    connected in {f['connected_s']:.1f} s; first progress after "
        + (f"{progress:.2f} s" if progress is not None else "(none)")
        + f" (target <= 1 s); {f['calls']} call(s), longest {f['longest_call_s']:.1f} s "
        f"(client timeout {CLIENT_TIMEOUT:.0f} s: {'REACHED' if f['timed_out'] else 'never'})",
        f"    first briefing after {f['first_result_s']:.1f} s",
        f"(b) new stdio server on the indexed knowledge base: first briefing after "
        f"{n['first_result_s']:.1f} s (target <= 5 s)",
        f"(c) warm research, {result['requests']} rounds (p50 / p95):",
    ]
    for k in ("in_process", "stdio", "http"):
        ratio = w[k].get("ratio_p50")
        lines.append(
            f"    {k:<10} {w[k]['p50_ms']:8.1f} ms / {w[k]['p95_ms']:8.1f} ms"
            + (f"   {ratio:.2f}x in process (target <= 1.10x)" if ratio else "")
        )
    return "\n".join(lines)
