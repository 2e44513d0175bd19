"""A property-based run of every operation that ``/openapi.json`` describes, against a real
server on a loopback port (uvicorn, a real knowledge base, the Summit routes on): schemathesis
builds the requests from the document alone, both ones that fit its schemas and ones that do
not, and none may be answered with a 5xx. Schemathesis runs each operation in turn, so none is
left out; each is bounded in examples."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from kbmem.interfaces.server import MemoryServer
from kbmem.interfaces.tokens import TokenStore
from kbmem.store.repository import KnowledgeBase

EXAMPLES_PER_OPERATION = 12
DOCUMENTED = {"GET", "HEAD", "POST", "DELETE", "OPTIONS"}  # the methods of the API's routes


@pytest.fixture(scope="module")
def served(
    example_kb_master: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[MemoryServer, str]]:
    """One server for the whole run (every operation's examples), on a copy of the example
    knowledge base, with the Summit routes on."""
    target = tmp_path_factory.mktemp("fuzz") / "kb"
    shutil.copytree(example_kb_master, target, symlinks=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MEMORY_GAM_ENABLED", "true")
        server = MemoryServer(("127.0.0.1", 0), KnowledgeBase(target))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    token, _ = TokenStore(server.kb.state_dir).create("default", "fuzz")
    try:
        yield server, token
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def api_schema(served: tuple[MemoryServer, str]) -> Any:
    server, _ = served
    return schemathesis.openapi.from_url(f"{server.url}/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")
answered: dict[str, set[int]] = {}


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_request_built_from_the_openapi_document_gets_a_5xx(
    case: Any, served: tuple[MemoryServer, str]
) -> None:
    _, token = served
    response = case.call(headers={"Authorization": f"Bearer {token}"}, timeout=120)
    answered.setdefault(f"{case.method} {case.path}", set()).add(response.status_code)
    if case.method.upper() not in DOCUMENTED:
        # Schemathesis also tries methods the document does not have (TRACE): those that
        # no route has are the server's 501 Not Implemented, as test_api holds them to.
        assert response.status_code in (405, 501), (case.method, response.text)
        return
    assert response.status_code < 500, (case.method, case.formatted_path, response.text)


def test_the_run_reached_every_operation(api_schema: Any) -> None:
    """Every operation of the document was sent requests, and some got past validation
    (read from what the test above recorded: pytest runs a module's tests in order)."""
    operations = {
        f"{op.method.upper()} {op.path}" for op in (r.ok() for r in api_schema.get_all_operations())
    }
    assert len(operations) >= 15
    assert operations <= set(answered), operations - set(answered)
    assert any(code < 400 for codes in answered.values() for code in codes), answered
