"""``kbmem bench api``: what the HTTP API adds to a request, against the same call in process.

A fresh copy of the example knowledge base gets a ``kbmem serve`` server on a loopback port (a
real :class:`~kbmem.interfaces.server.MemoryServer` with a real token). Each of ``--requests``
rounds asks the template's next question four ways, taken in turn so that both sides see the
same machine: ``Memory.research`` and ``POST /v1/research``, ``Memory.search`` and ``POST
/v1/search`` (hybrid, k 10; a search is fast, so the API's own cost shows most there). Reported:
p50/p95 of each (to 0.01 ms), the HTTP p50 as a ratio of the in-process p50, and the median of
the rounds' own ratios (HTTP over in process, the two calls of one round). The first call of
each kind (model and index loading) is not timed.

Spans are recorded as in production with the OpenTelemetry SDK, when it is installed, and an
exporter that drops them; each round also times :func:`kbmem.telemetry.record_research` (the
spans and metrics of one research) on its briefing, reported as a share of research time."""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kbmem.bench.chat import questions
from kbmem.bench.stats import percentile
from kbmem.errors import ValidationError
from kbmem.interfaces.server import MemoryServer
from kbmem.interfaces.service import Memory
from kbmem.interfaces.tokens import TokenStore
from kbmem.memorize.template import init_kb
from kbmem.telemetry import record_research

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
        host, port = server.server_address[:2]
        conn = http.client.HTTPConnection(str(host), port, timeout=300)

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

        _trace_to_nowhere()

        def telemetry(q: str) -> None:
            briefing = memory.research_call(q)(None)
            t0 = time.perf_counter()
            record_research(briefing, briefing.trace, time.time_ns(), tenant, 2)
            times["telemetry"].append((time.perf_counter() - t0) * 1000)

        calls: dict[str, Callable[[str], Any]] = {
            "research_inproc": memory.research,
            "research_http": lambda q: post("/v1/research", {"request": q}),
            "search_inproc": lambda q: memory.search(q, "hybrid", 10),
            "search_http": lambda q: post("/v1/search", {"query": q, "tool": "hybrid", "k": 10}),
        }
        times: dict[str, list[float]] = {name: [] for name in calls}
        times["telemetry"] = []
        try:
            for call in calls.values():
                call(asked[0])  # warm-up: the embedding model, the index, the connection
            for n in range(requests):
                question = asked[n % len(asked)]
                for name, call in calls.items():
                    t0 = time.perf_counter()
                    call(question)
                    times[name].append((time.perf_counter() - t0) * 1000)
                telemetry(question)
        finally:
            conn.close()
            server.shutdown()
            server.server_close()
            memory.close()
    result: dict[str, Any] = {"requests": requests}
    result["telemetry_ms_p50"] = round(percentile(times.pop("telemetry"), 50), 3)
    for name, values in times.items():
        result[f"{name}_ms_p50"] = round(percentile(values, 50), 2)
        result[f"{name}_ms_p95"] = round(percentile(values, 95), 2)
    for kind in KINDS:
        over_http, in_process = times[f"{kind}_http"], times[f"{kind}_inproc"]
        # The ratio of the two medians, each taken unrounded; and the median of each
        # round's own ratio (the two calls of a round run back to back, under one load).
        result[f"{kind}_http_over_inproc_p50"] = round(
            percentile(over_http, 50) / percentile(in_process, 50), 3
        )
        result[f"{kind}_http_over_inproc_pairs_p50"] = round(
            statistics.median(h / i for h, i in zip(over_http, in_process, strict=True)), 3
        )
    result["telemetry_share_of_research"] = round(
        result["telemetry_ms_p50"] / result["research_inproc_ms_p50"], 4
    )
    result["cpus"] = os.cpu_count()
    result["load_average_1m"] = round(os.getloadavg()[0], 2)
    return result


def render(result: dict[str, Any]) -> str:
    lines = [f"HTTP API against the same call in process, {result['requests']} rounds"]
    for kind in KINDS:
        lines.append(
            f"{kind:<9} in process p50 {result[f'{kind}_inproc_ms_p50']:.2f} ms  "
            f"p95 {result[f'{kind}_inproc_ms_p95']:.2f} ms   over HTTP p50 "
            f"{result[f'{kind}_http_ms_p50']:.2f} ms  p95 {result[f'{kind}_http_ms_p95']:.2f} ms"
            f"   ({result[f'{kind}_http_over_inproc_p50']:.3f}x; per round, median "
            f"{result[f'{kind}_http_over_inproc_pairs_p50']:.3f}x)"
        )
    lines.append(
        f"telemetry p50 {result['telemetry_ms_p50']:.3f} ms per research "
        f"({100 * result['telemetry_share_of_research']:.2f}% of research in process)"
    )
    lines.append(f"machine   {result['cpus']} CPUs, load average {result['load_average_1m']}")
    return "\n".join(lines)


def _trace_to_nowhere() -> None:
    """The OpenTelemetry SDK with an exporter that drops every span, if the SDK is installed
    and no provider is set yet: spans are then built as in production, and sent nowhere."""
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            SimpleSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )
    except ImportError:
        return

    class Nowhere(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Nowhere()))
    trace.set_tracer_provider(provider)
