"""A property-based run of every route that ``/openapi.json`` describes, against a real server
on a loopback port (uvicorn, a real knowledge base, the Summit routes on): requests are built
from the document alone (its paths, parameters and body schemas, with values that fit the
schema and values that do not), and none may be answered with a 5xx. Bounded in examples."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from helpers.strategies import ANY_JSON
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbmem.interfaces.server import MemoryServer
from kbmem.interfaces.tokens import TokenStore
from kbmem.store.repository import KnowledgeBase

EXAMPLES = 150


def from_schema(schema: dict[str, Any], components: dict[str, Any], depth: int = 0) -> Any:
    """Values for ``schema``: mostly ones that fit it, sometimes anything at all."""
    if "$ref" in schema:
        return from_schema(components[schema["$ref"].rsplit("/", 1)[1]], components, depth)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return st.one_of([from_schema(o, components, depth) for o in options])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    kind = schema.get("type")
    fitting: Any
    if kind == "object" and depth < 3:
        properties = schema.get("properties", {})
        fields = {name: from_schema(sub, components, depth + 1) for name, sub in properties.items()}
        required = set(schema.get("required", ()))
        fitting = st.fixed_dictionaries(
            {k: v for k, v in fields.items() if k in required},
            optional={k: v for k, v in fields.items() if k not in required},
        )
    elif kind == "array" and depth < 3:
        items = from_schema(schema.get("items", {}), components, depth + 1)
        fitting = st.lists(items, max_size=3)
    elif kind == "string":
        fitting = st.text(max_size=30)
    elif kind == "integer":
        fitting = st.integers(
            min_value=schema.get("minimum", -(10**6)), max_value=schema.get("maximum", 10**6)
        )
    elif kind == "number":
        fitting = st.floats(allow_nan=False, allow_infinity=False)
    elif kind == "boolean":
        fitting = st.booleans()
    else:
        fitting = ANY_JSON
    return st.one_of(fitting, fitting, fitting, ANY_JSON)


@pytest.fixture
def api(example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> Iterator[httpx.Client]:
    monkeypatch.setenv("MEMORY_GAM_ENABLED", "true")
    server = MemoryServer(("127.0.0.1", 0), example_kb)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    token, _ = TokenStore(example_kb.state_dir).create("default", "fuzz")
    headers = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
            yield client
    finally:
        server.shutdown()
        server.server_close()


def test_no_request_built_from_the_openapi_document_gets_a_5xx(api: httpx.Client) -> None:
    doc = api.get("/openapi.json").json()
    components = doc["components"]["schemas"]
    operations = [
        (path, method, op) for path, ops in doc["paths"].items() for method, op in ops.items()
    ]
    assert len(operations) >= 15, [f"{m} {p}" for p, m, _ in operations]
    seen: set[tuple[str, str]] = set()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(st.data())
    def one(data: st.DataObject) -> None:
        path, method, op = data.draw(st.sampled_from(operations))
        url = path
        query: dict[str, str] = {}
        for param in op.get("parameters", []):
            value = data.draw(st.text(max_size=12) | st.sampled_from(["1", "0", "-1", "HEAD"]))
            if param["in"] == "path":
                url = url.replace("{" + param["name"] + "}", quote(value or "x", safe=""))
            elif data.draw(st.booleans()):
                query[param["name"]] = value
        if data.draw(st.booleans()):
            query[data.draw(st.sampled_from(["zz", "limit", "at"]))] = data.draw(
                st.text(max_size=8)
            )
        body = None
        if "requestBody" in op:
            schema = op["requestBody"]["content"]["application/json"]["schema"]
            body = data.draw(from_schema(schema, components))
        answer = api.request(method.upper(), url, params=query, json=body)
        seen.add((method, path))
        assert answer.status_code < 500, (method, url, query, body, answer.text)

    one()
    # The run reached most routes (the draw is random, the routes few).
    assert len(seen) >= len(operations) // 2, seen
