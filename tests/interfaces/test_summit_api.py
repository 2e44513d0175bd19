"""The Summit routes (``/memory/*``), their flag, ``/metrics``, ``/openapi.json`` and the
spans: a real server on a loopback port over a real knowledge base, spoken to with httpx."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from helpers.kbgit import git, summit_session
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from kbmem.interfaces.server import MemoryServer
from kbmem.interfaces.tokens import TokenStore
from kbmem.store.repository import KnowledgeBase

SPANS = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def _provider() -> None:
    # The global provider can be set once per process (``kbmem bench api``, run in process by
    # its own test, sets one too): the in-memory exporter joins whichever SDK provider is set.
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        current.add_span_processor(SimpleSpanProcessor(SPANS))
        return
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(SPANS))
    trace.set_tracer_provider(provider)


def serve(kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, enabled: bool) -> MemoryServer:
    monkeypatch.setenv("MEMORY_GAM_ENABLED", "true" if enabled else "false")
    server = MemoryServer(("127.0.0.1", 0), kb)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def on(example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> Iterator[httpx.Client]:
    server = serve(example_kb, monkeypatch, True)
    token, _ = TokenStore(example_kb.state_dir).create("default", "test")
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
        yield client
    server.shutdown()
    server.server_close()


def test_while_the_flag_is_off_the_memory_routes_answer_503_naming_it(
    example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve(example_kb, monkeypatch, False)
    token, _ = TokenStore(example_kb.state_dir).create("default", "test")
    head = example_kb.head()
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}) as c:
            for route, body in [
                ("/memory/ingest_session", summit_session(None, ["x"], None)),
                ("/memory/build_context", {"tenantId": "default", "request": "x"}),
            ]:
                answer = c.post(route, json=body)
                assert answer.status_code == 503
                assert "MEMORY_GAM_ENABLED" in answer.json()["error"]["message"]
            # Nothing else changes.
            assert c.post("/v1/search", json={"query": "roster"}).status_code == 200
    finally:
        server.shutdown()
        server.server_close()
    assert example_kb.head() == head


def test_a_bad_flag_value_is_an_error_naming_it(
    example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_GAM_ENABLED", "maybe")
    with pytest.raises(Exception, match="MEMORY_GAM_ENABLED"):
        MemoryServer(("127.0.0.1", 0), example_kb)


def test_ingest_session_answers_the_notes_shape(
    on: httpx.Client, example_kb: KnowledgeBase
) -> None:
    session = summit_session(
        "kiln-1", ["The kiln fires at dawn.", "Noted."], None, "Kiln", description="Pottery"
    )
    answer = on.post("/memory/ingest_session", json=session)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert set(body) == {"sessionId", "memo", "pages"}
    assert body["sessionId"] == "kiln-1" and body["memo"]
    assert [p["sequence"] for p in body["pages"]] == list(range(1, len(body["pages"]) + 1))
    assert all(p["header"]["session_id"] == "kiln-1" for p in body["pages"])
    # The description is kept, in the session's record.
    assert "Pottery" in git(example_kb.root, "grep", "-h", "description", "HEAD", "--", "tenants")


def test_ingest_session_names_the_field_at_fault(on: httpx.Client) -> None:
    session = summit_session("s", ["a", "b", "c"], None)
    session["turns"][2]["timestamp"] = "not a time"
    answer = on.post("/memory/ingest_session", json=session)
    assert answer.status_code == 400 and answer.json()["error"]["field"] == "turns[2].timestamp"
    answer = on.post("/memory/ingest_session", json={**session, "colour": "red"})
    assert answer.status_code == 400 and answer.json()["error"]["field"] == "body"


def test_build_context_returns_a_briefing_and_spans(on: httpx.Client) -> None:
    SPANS.clear()
    answer = on.post(
        "/memory/build_context",
        json={"tenantId": "default", "request": "Who is on the team roster?", "mode": "deep"},
    )
    assert answer.status_code == 200, answer.text
    briefing = answer.json()
    assert briefing["mode"] == "deep" and briefing["evidence"]
    names = {s.name for s in SPANS.get_finished_spans()}
    assert {"researcher.research", "researcher.plan", "researcher.search"} <= names
    assert {"researcher.integrate", "researcher.reflect"} <= names
    for span in SPANS.get_finished_spans():  # ids and counts only, never text
        assert "roster" not in str(dict(span.attributes or {})).lower()
    searches = [s for s in SPANS.get_finished_spans() if s.name == "researcher.search"]
    assert all("tool" in (s.attributes or {}) and "hits" in (s.attributes or {}) for s in searches)


def test_research_spans_continue_the_callers_trace(on: httpx.Client) -> None:
    """A caller that sends W3C trace context sees research as part of its own trace; one
    that sends none gets a trace of its own."""
    caller_trace, caller_span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    for parent in (f"00-{caller_trace}-{caller_span}-01", None):
        SPANS.clear()
        answer = on.post(
            "/memory/build_context",
            json={"tenantId": "default", "request": "Who is on the team roster?"},
            headers={"traceparent": parent} if parent else {},
        )
        assert answer.status_code == 200, answer.text
        (root,) = [s for s in SPANS.get_finished_spans() if s.name == "researcher.research"]
        if parent:
            assert format(root.context.trace_id, "032x") == caller_trace
            assert root.parent is not None and format(root.parent.span_id, "016x") == caller_span
        else:
            assert format(root.context.trace_id, "032x") != caller_trace and root.parent is None
        steps = [s for s in SPANS.get_finished_spans() if s.name == "researcher.plan"]
        assert steps and all(s.context.trace_id == root.context.trace_id for s in steps)


def test_fast_mode_does_not_reflect_and_budgets_are_clamped(on: httpx.Client) -> None:
    fast = on.post(
        "/memory/build_context",
        json={"tenantId": "default", "request": "Who is on the team roster?", "mode": "fast"},
    ).json()
    assert fast["reflectionSteps"] == 0 and fast["mode"] == "fast"
    clamped = on.post(
        "/memory/build_context",
        json={
            "tenantId": "default",
            "request": "Who is on the team roster?",
            "budgets": {"maxPages": 500, "maxReflectionDepth": 50, "maxOutputTokens": 400},
        },
    )
    assert clamped.status_code == 200, clamped.text
    assert len(clamped.json()["pagesUsed"]) <= 32


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"request": "x"}, 400, "tenantId"),
        ({"tenantId": "default", "request": "x", "budgets": {"maxPages": "5"}}, 400, None),
        ({"tenantId": "default", "request": "x", "budgets": {"maxPages": True}}, 400, None),
        ({"tenantId": "default", "request": "x", "mode": "slow"}, 400, "mode"),
        ({"tenantId": "default", "request": "x", "extra": 1}, 400, "body"),
        ({"tenantId": "other", "request": "x"}, 403, None),
        ({"tenantId": "no-such-tenant", "request": "x"}, 403, None),
    ],
)
def test_build_context_refusals(
    on: httpx.Client, body: dict[str, Any], status: int, field: str | None
) -> None:
    answer = on.post("/memory/build_context", json=body)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    if field:
        assert error["field"] == field
    if status == 403:  # the same answer whether the other tenant exists or not
        assert "other" not in error["message"] and "no-such" not in error["message"]


def test_a_point_zero_budget_is_whole(on: httpx.Client) -> None:
    answer = on.post(
        "/memory/build_context",
        json={"tenantId": "default", "request": "roster", "budgets": {"maxPages": 3.0}},
    )
    assert answer.status_code == 200, answer.text


def _samples(text: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(text):
        out.setdefault(family.name, []).extend(family.samples)
    return out


def test_metrics_after_real_requests(on: httpx.Client) -> None:
    on.post("/memory/build_context", json={"tenantId": "default", "request": "roster"})
    on.post("/memory/ingest_session", json=summit_session("m-1", ["Metrics day."], None))
    on.get("/v1/pages")
    answer = on.get("/metrics", headers={"Authorization": ""})  # open on loopback
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    samples = _samples(answer.text)
    for name in (
        "gam_ingest_latency_ms",
        "gam_build_context_latency_ms",
        "gam_pages_used",
        "gam_reflection_steps",
        "gam_context_tokens_out",
    ):
        counts = [s.value for s in samples[name] if s.name == f"{name}_count"]
        assert counts and sum(counts) >= 1, name
    hits = [s for s in samples["gam_retrieval_hits"] if s.name == "gam_retrieval_hits_total"]
    assert hits and all(s.labels["tool"] for s in hits)
    requests = [s for s in samples["gam_http_requests"] if s.name.endswith("_total")]
    assert any(
        s.labels == {"route": "/v1/pages", "method": "GET", "status": "200"} for s in requests
    )
    assert "kbm_" not in answer.text  # never a token


def test_openapi_describes_every_route(on: httpx.Client) -> None:
    doc = on.get("/openapi.json", headers={"Authorization": ""}).json()
    assert doc["openapi"].startswith("3.")
    for path in ("/v1/pages", "/v1/search", "/memory/ingest_session", "/memory/build_context"):
        assert path in doc["paths"]
    build = doc["paths"]["/memory/build_context"]["post"]
    assert build["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "BuildContextRequest"
    )
    assert "400" in build["responses"] and "503" in build["responses"]
    # The query parameters are described from the models the MCP tools take, and typed.
    listed = {p["name"]: p for p in doc["paths"]["/v1/pages"]["get"]["parameters"]}
    assert set(listed) == {"at", "limit", "offset"}
    assert listed["limit"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 1000}
    history = doc["paths"]["/v1/history"]["get"]["parameters"]
    assert {p["name"] for p in history} == {"page", "limit", "before"}


def test_the_docs_page_loads_nothing_from_another_server(on: httpx.Client) -> None:
    """``/docs`` was off: FastAPI's page takes Swagger UI from a CDN. It is served with its
    assets from this server, so it works without internet."""
    page = on.get("/docs", headers={"Authorization": ""})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    linked = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert linked and all(url.startswith("/docs/assets/") for url in linked), linked
    assert "url: '/openapi.json'" in page.text
    for url in linked:
        asset = on.get(url, headers={"Authorization": ""})
        assert asset.status_code == 200 and len(asset.content) > 1000, url
    script = on.get("/docs/assets/swagger-ui-bundle.js").text
    # Swagger UI 5 (FastAPI writes OpenAPI 3.1, which Swagger UI 4 cannot render).
    assert "SwaggerUIBundle" in script and "isOAS31" in script
    missing = on.get("/docs/assets/../kbmem.yaml")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def test_old_snake_case_names_are_kept_beside_the_camel_case_ones(on: httpx.Client) -> None:
    listed = on.get("/v1/pages").json()
    assert "nextOffset" in listed and "next_offset" in listed
    page = listed["pages"][0]
    assert page["createdAt"] == page["created_at"] and page["sessionId"] == page["session_id"]
