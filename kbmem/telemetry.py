"""Traces and metrics: the OpenTelemetry tracer ``memory-gam`` and the Prometheus metrics of
the Summit design note, at the foundation so that every layer (the memorizer, the researcher,
the servers) records into the same ones without importing a front end.

Spans go nowhere unless an OpenTelemetry SDK is installed and configured (the ``otel`` extra,
set up by the standard ``OTEL_*`` variables, see :func:`configure_tracing`); without one the
API's no-op tracer costs next to nothing. Metrics live in one registry of this process, which
``GET /metrics`` renders. Neither ever carries page text, a request's words or a token: only
ids, counts, durations and names from closed sets (tools, routes, statuses, modes).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

TRACER_NAME = "memory-gam"

REGISTRY = CollectorRegistry(auto_describe=True)

_MS_BUCKETS = (5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000)
_COUNT_BUCKETS = (0, 1, 2, 4, 8, 16, 32, 64)
_TOKEN_BUCKETS = (0, 100, 250, 500, 1000, 2000, 4000, 8000, 20000)

# The note's six metrics, under its names. No tenant label: tenants are created by any
# session that names a new one, so their number has no bound (docs/http-api.md).
INGEST_LATENCY = Histogram(
    "gam_ingest_latency_ms",
    "Time to memorize one session, in milliseconds.",
    buckets=_MS_BUCKETS,
    registry=REGISTRY,
)
BUILD_CONTEXT_LATENCY = Histogram(
    "gam_build_context_latency_ms",
    "Time to research one request into a briefing, in milliseconds.",
    ["mode"],
    buckets=_MS_BUCKETS,
    registry=REGISTRY,
)
RETRIEVAL_HITS = Counter(
    "gam_retrieval_hits",  # exposed as gam_retrieval_hits_total
    "Hits the researcher's searches returned, by retrieval tool.",
    ["tool"],
    registry=REGISTRY,
)
PAGES_USED = Histogram(
    "gam_pages_used",
    "Pages a briefing drew on.",
    buckets=_COUNT_BUCKETS,
    registry=REGISTRY,
)
REFLECTION_STEPS = Histogram(
    "gam_reflection_steps",
    "Reflection steps a research took beyond its first pass.",
    buckets=(0, 1, 2, 3, 4, 5),
    registry=REGISTRY,
)
CONTEXT_TOKENS_OUT = Histogram(
    "gam_context_tokens_out",
    "Tokens in a briefing's context.",
    buckets=_TOKEN_BUCKETS,
    registry=REGISTRY,
)
# The HTTP API's own: ``route`` is the route's pattern (``/v1/pages/{page_id}``), never the
# path a client sent, so the label set stays as small as the route table.
HTTP_REQUESTS = Counter(
    "gam_http_requests",  # exposed as gam_http_requests_total
    "HTTP requests answered, by route, method and status.",
    ["route", "method", "status"],
    registry=REGISTRY,
)
HTTP_LATENCY = Histogram(
    "gam_http_request_latency_ms",
    "Time to answer an HTTP request, in milliseconds, by route and method.",
    ["route", "method"],
    buckets=_MS_BUCKETS,
    registry=REGISTRY,
)


def tracer() -> trace.Tracer:
    """The ``memory-gam`` tracer of whatever provider is set now (a test's in-memory one,
    the SDK's from :func:`configure_tracing`, or the API's no-op)."""
    return trace.get_tracer(TRACER_NAME)


@contextmanager
def span(name: str, **attributes: Any) -> Iterator[trace.Span]:
    """A span named ``name`` with ``attributes`` (None values left out)."""
    with tracer().start_as_current_span(name) as current:
        for key, value in attributes.items():
            if value is not None:
                current.set_attribute(key, value)
        yield current


@contextmanager
def caller_trace(traceparent: str | None, tracestate: str | None = None) -> Iterator[None]:
    """Spans started inside continue the caller's trace when a request carries W3C trace
    context (``traceparent``), so a service calling kbmem sees research as part of its own
    request; without the header nothing is changed (and nothing is paid)."""
    if not traceparent:
        yield
        return
    carrier = {"traceparent": traceparent}
    if tracestate:
        carrier["tracestate"] = tracestate
    token = otel_context.attach(propagate.extract(carrier))
    try:
        yield
    finally:
        otel_context.detach(token)


def record_research(
    briefing: Any, trace_events: list[Any], started_ns: int, tenant: str, max_depth: int
) -> None:
    """One finished research as spans and metrics: ``researcher.research`` timed from
    ``started_ns`` to now, and under it a span per step of its trace (``researcher.plan``,
    ``researcher.search`` per tool call, ``researcher.integrate``, ``researcher.reflect``,
    ``researcher.fallback``), recorded when the research ends, so the steps carry their
    attributes (a search's tool, hits and milliseconds) rather than their own timing."""
    PAGES_USED.observe(len(briefing.pages_used))
    REFLECTION_STEPS.observe(briefing.reflection_steps)
    CONTEXT_TOKENS_OUT.observe(briefing.tokens_used)
    for event in trace_events:
        if event.kind == "tool_result" and event.data.get("tool"):
            RETRIEVAL_HITS.labels(tool=str(event.data["tool"])).inc(len(event.data["hits"]))
    root = tracer().start_span(
        "researcher.research",
        start_time=started_ns,
        attributes={
            "tenant": tenant,
            "max_depth": max_depth,
            "pages": len(briefing.pages_used),
            "tokens": briefing.tokens_used,
            "reflection_steps": briefing.reflection_steps,
            "partial": bool(briefing.partial),
        },
    )
    context = trace.set_span_in_context(root)
    for event in trace_events:
        name = _STEP_SPANS.get(event.kind)
        if name is None:
            continue
        data = event.data
        attributes: dict[str, Any] = {"step": event.step}
        if event.kind == "plan":
            attributes["actions"] = len(data.get("actions", []))
        elif event.kind == "tool_result":
            attributes.update(
                tool=str(data.get("tool", "")),
                hits=len(data.get("hits", [])),
                ms=float(data.get("ms", 0.0)),
                error=bool(data.get("error")),
            )
        elif event.kind == "integrate":
            attributes.update(pages=len(data.get("pages", [])), candidates=data["candidates"])
        elif event.kind == "reflect":
            attributes["done"] = bool(data.get("done"))
        elif event.kind == "fallback":
            # Where and to what, and the error's kind only: a model's message can quote a
            # prompt, and so page text.
            error = str(data.get("error", ""))
            attributes.update(
                stage=str(data.get("stage", "")),
                **{"fallback.reason": "unreachable" if "unreachable" in error else "error"},
            )
        tracer().start_span(name, context=context, attributes=attributes).end()
    root.end()


def record_ingest(result: Any, started_ns: int) -> None:
    """One memorized session as spans and metrics: ``memorizer.memorize`` timed from
    ``started_ns`` and a ``memorizer.page`` under it per page written."""
    INGEST_LATENCY.observe((time.time_ns() - started_ns) / 1e6)
    root = tracer().start_span(
        "memorizer.memorize",
        start_time=started_ns,
        attributes={
            "tenant": result.tenant_id,
            "session": result.session_id,
            "status": result.status,
            "pages": len(result.page_ids),
        },
    )
    context = trace.set_span_in_context(root)
    for n, page_id in enumerate(result.page_ids, start=1):
        attributes = {"tenant": result.tenant_id, "page": page_id, "sequence": n}
        tracer().start_span("memorizer.page", context=context, attributes=attributes).end()
    root.end()


_STEP_SPANS = {
    "plan": "researcher.plan",
    "tool_result": "researcher.search",
    "integrate": "researcher.integrate",
    "reflect": "researcher.reflect",
    "fallback": "researcher.fallback",
}


def metrics_text() -> bytes:
    """Every metric in the Prometheus text format."""
    return generate_latest(REGISTRY)


def configure_tracing() -> bool:
    """Send spans to an OTLP collector when the SDK and exporter are installed (the ``otel``
    extra) and ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_TRACES_EXPORTER`` is set; the SDK
    reads the rest of the standard ``OTEL_*`` variables itself. Returns whether it did."""
    if not (
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_TRACES_EXPORTER")
    ):
        return False
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found,unused-ignore]
            OTLPSpanExporter,
        )
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        return False
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return True
