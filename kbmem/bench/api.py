"""``kbmem bench api``: what the HTTP API adds to a request, against the same call in process.

A fresh copy of the example knowledge base gets a ``kbmem serve`` server on a loopback port (a
real :class:`~kbmem.interfaces.http.MemoryServer` with a real token). Each of ``--requests``
rounds asks the template's next question four ways, taken in turn so that both sides see the
same machine: ``Memory.research`` and ``POST /v1/research``, ``Memory.search`` and ``POST
/v1/search`` (hybrid, k 10; a search is fast, so the API's own cost shows most there). Reported:
p50/p95 of each, and the HTTP p50 as a ratio of the in-process p50. The first call of each kind
(model and index loading) is not timed."""

from __future__ import annotations

import argparse
import http.client
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kbmem.bench.chat import questions
from kbmem.bench.stats import percentile
from kbmem.errors import ValidationError
from kbmem.interfaces.http import MemoryServer
from kbmem.interfaces.service import Memory
from kbmem.interfaces.tokens import TokenStore
from kbmem.memorize.template import init_kb

KINDS = ("research", "search")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--requests", type=int, default=40, help="rounds to time (default 40)")


def run(requests: int = 40) -> dict[str, Any]:
    if requests < 1:
        raise ValidationError("must be at least 1", "--requests")
    asked = questions()
    with tempfile.TemporaryDirectory(prefix="kbmem-bench-api-") as tmp:
        kb = init_kb(Path(tmp) / "kb")
        tenant = kb.settings.data["default_tenant"]
        token, _ = TokenStore(kb.state_dir).create(tenant, "bench")
        memory = Memory(kb, tenant)
        server = MemoryServer(("127.0.0.1", 0), kb)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        conn = http.client.HTTPConnection(*server.server_address[:2], timeout=300)

        def post(route: str, body: dict[str, Any]) -> None:
            conn.request(
                "POST",
                route,
                body=json.dumps(body),
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            )
            response = conn.getresponse()
            payload = response.read()
            if response.status != 200:
                raise RuntimeError(f"{route} answered {response.status}: {payload[:200]!r}")

        calls: dict[str, Callable[[str], Any]] = {
            "research_inproc": memory.research,
            "research_http": lambda q: post("/v1/research", {"request": q}),
            "search_inproc": lambda q: memory.search(q, "hybrid", 10),
            "search_http": lambda q: post("/v1/search", {"query": q, "tool": "hybrid", "k": 10}),
        }
        times: dict[str, list[float]] = {name: [] for name in calls}
        try:
            for call in calls.values():
                call(asked[0])  # warm-up: the embedding model, the index, the connection
            for n in range(requests):
                question = asked[n % len(asked)]
                for name, call in calls.items():
                    t0 = time.perf_counter()
                    call(question)
                    times[name].append((time.perf_counter() - t0) * 1000)
        finally:
            conn.close()
            server.shutdown()
            server.server_close()
            memory.close()
    result: dict[str, Any] = {"requests": requests}
    for name, values in times.items():
        result[f"{name}_ms_p50"] = round(percentile(values, 50), 1)
        result[f"{name}_ms_p95"] = round(percentile(values, 95), 1)
    for kind in KINDS:
        result[f"{kind}_http_over_inproc_p50"] = round(
            result[f"{kind}_http_ms_p50"] / result[f"{kind}_inproc_ms_p50"], 3
        )
    result["cpus"] = os.cpu_count()
    result["load_average_1m"] = round(os.getloadavg()[0], 2)
    return result


def render(result: dict[str, Any]) -> str:
    lines = [f"HTTP API against the same call in process, {result['requests']} rounds"]
    for kind in KINDS:
        lines.append(
            f"{kind:<9} in process p50 {result[f'{kind}_inproc_ms_p50']:.1f} ms  "
            f"p95 {result[f'{kind}_inproc_ms_p95']:.1f} ms   over HTTP p50 "
            f"{result[f'{kind}_http_ms_p50']:.1f} ms  p95 {result[f'{kind}_http_ms_p95']:.1f} ms"
            f"   ({result[f'{kind}_http_over_inproc_p50']:.2f}x)"
        )
    lines.append(f"machine   {result['cpus']} CPUs, load average {result['load_average_1m']}")
    return "\n".join(lines)
