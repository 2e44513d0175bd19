"""The MCP server on the official SDK as the SDK's own client sees it: in process for the
tools, resources and prompts (the same handlers every transport serves), over stdio against
the real ``kbmem mcp`` command, and over Streamable HTTP served by uvicorn on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.kbgit import ROOT
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from kbmem.interfaces.mcp_sdk.server import PROGRESS_EVERY, TOOLS, KbmemMcp, ProgressPacer
from kbmem.interfaces.mcp_sdk.stdio import build
from kbmem.interfaces.server import MemoryServer
from kbmem.interfaces.service import Memory
from kbmem.interfaces.tokens import TokenStore
from kbmem.memorize.template import init_kb
from kbmem.store.repository import KnowledgeBase

QUESTION = "Who is Femi Adeyemi's onboarding buddy?"
TENANT = "default"
SESSION = {
    "sessionId": "mcp-sdk-test",
    "title": "A test of memorizing over MCP",
    "turns": [
        {
            "role": "user",
            "content": "The zeppelin hangar key is kept by Wanjiru.",
            "timestamp": "2026-04-01T10:00:00",
            "metadata": {"speaker": "Olu"},
        }
    ],
}


@pytest.fixture
def handlers(example_kb: KnowledgeBase) -> Iterator[KbmemMcp]:
    served = build(Memory(example_kb, TENANT))
    yield served
    served.close()


def run(test: Any) -> None:
    anyio.run(test)


def test_tools_list_schemas_and_annotations(handlers: KbmemMcp) -> None:
    async def test() -> None:
        async with Client(handlers.server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {t.name for t in TOOLS}
            for tool in tools.values():
                assert tool.input_schema["type"] == "object"
                assert tool.output_schema is not None and tool.output_schema["type"] == "object"
                hints = tool.annotations
                assert hints is not None and hints.destructive_hint is False
                assert hints.read_only_hint is not None and hints.idempotent_hint is not None
            assert tools["memorize_session"].annotations.idempotent_hint is True  # type: ignore[union-attr]
            assert tools["memorize_session"].annotations.read_only_hint is False  # type: ignore[union-attr]
            assert tools["chat"].annotations.idempotent_hint is False  # type: ignore[union-attr]
            assert tools["research"].input_schema["required"] == ["request"]
            with pytest.raises(MCPError, match="invalid cursor"):
                await client.list_tools(cursor="bogus")

    run(test)


def test_every_tool_answers(handlers: KbmemMcp, example_kb: KnowledgeBase) -> None:
    def handlers_kb_head() -> str | None:
        return example_kb.head()

    async def test() -> None:
        async with Client(handlers.server) as client:
            r = await client.call_tool("research", {"request": QUESTION})
            assert not r.is_error, r.content
            assert r.structured_content["evidence"]
            assert json.loads(r.content[0].text)["evidence"]  # type: ignore[union-attr]
            r = await client.call_tool("search", {"query": "onboarding buddy", "k": 3})
            assert not r.is_error and len(r.structured_content["hits"]) == 3
            r = await client.call_tool("list_pages", {"limit": "2"})  # as the Inspector CLI sends
            assert not r.is_error and len(r.structured_content["pages"]) == 2
            pages = await client.call_tool("list_pages", {"limit": 2.0})  # integral float
            assert not pages.is_error and len(pages.structured_content["pages"]) == 2
            first = pages.structured_content["pages"][0]["id"]
            r = await client.call_tool("read_page", {"page_id": first})
            assert not r.is_error and r.structured_content["id"] == first
            r = await client.call_tool("page_history", {"page_id": first, "limit": 1})
            assert not r.is_error and len(r.structured_content["commits"]) == 1
            r = await client.call_tool("memorize_session", {"session": SESSION})
            assert not r.is_error and r.structured_content["sessionId"] == "mcp-sdk-test"
            head = handlers_kb_head()
            again = await client.call_tool("memorize_session", {"session": SESSION})
            assert not again.is_error and handlers_kb_head() == head  # idempotent
            r = await client.call_tool("search", {"query": "zeppelin hangar key", "tool": "bm25"})
            assert r.structured_content["hits"][0]["pageId"].startswith("mcp-sdk-test/")
            r = await client.call_tool("chat", {"message": QUESTION})
            assert not r.is_error, r.content
            turn_id = r.structured_content["turn_id"]
            r = await client.call_tool("list_turns", {})
            assert not r.is_error and r.structured_content["total"] >= 1
            r = await client.call_tool("audit_turn", {"turn_id": turn_id})
            assert not r.is_error, r.content

    run(test)


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("research", {}, "research: request: is required"),
        ("list_pages", {"bogus": 1}, "list_pages: bogus: is not a parameter here"),
        ("search", {"query": "x", "k": 0}, "search: k: "),
        ("search", {"query": "x", "tool": "grep"}, "search: tool: "),
        (
            "memorize_session",
            {"session": {"turns": [{"role": "user", "content": 5}]}},
            "memorize_session: session.turns[0].content: ",
        ),
        ("read_page", {"page_id": "no-such/1"}, "read_page: "),
        ("audit_turn", {"turn_id": "nonsense"}, "audit_turn: "),
    ],
)
def test_errors_are_results_naming_the_field(
    handlers: KbmemMcp, name: str, arguments: dict[str, Any], expected: str
) -> None:
    async def test() -> None:
        async with Client(handlers.server) as client:
            r = await client.call_tool(name, arguments)
            assert r.is_error
            assert r.content[0].text.startswith(expected), r.content[0].text  # type: ignore[union-attr]

    run(test)


def test_unknown_tool_is_a_protocol_error(handlers: KbmemMcp) -> None:
    async def test() -> None:
        async with Client(handlers.server) as client:
            with pytest.raises(MCPError, match="unknown tool 'nope'"):
                await client.call_tool("nope", {})

    run(test)


# Clients of the handshake era still ping, so the server must answer them: the SDK's warning
# that the method is gone in the newest protocol version is what this test expects.
@pytest.mark.filterwarnings("ignore:ping is removed:mcp.shared.exceptions.MCPDeprecationWarning")
def test_research_reports_progress_and_ping_answers_meanwhile(handlers: KbmemMcp) -> None:
    async def test() -> None:
        seen: list[tuple[float, str | None]] = []
        pings: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, message))

        # ping exists up to the handshake era (2025-11-25); 2026-07-28 removed it.
        async with Client(handlers.server, mode="legacy") as client:
            async with anyio.create_task_group() as tg:

                async def ping_while_running() -> None:
                    while not seen:
                        await anyio.sleep(0.05)
                    started = time.monotonic()
                    await client.send_ping()
                    pings.append(time.monotonic() - started)

                tg.start_soon(ping_while_running)
                r = await client.call_tool(
                    "research", {"request": QUESTION}, progress_callback=on_progress
                )
            assert not r.is_error
        assert [p for p, _ in seen] == sorted(p for p, _ in seen)
        assert any(m and m.startswith("plan") for _, m in seen), seen
        assert pings and pings[0] < 2.0

    run(test)


def test_progress_is_paced_the_first_report_at_once() -> None:
    ticks = iter([0.0, 0.1, 0.49, 0.5, 0.6, 1.2, 1.3])
    pacer = ProgressPacer(every=0.5, clock=lambda: next(ticks))
    assert [pacer.due() for _ in range(7)] == [True, False, False, True, False, True, False]


def test_warm_research_sends_few_progress_reports(handlers: KbmemMcp) -> None:
    """A warm research (a dozen trace steps in well under a second) reports its first step at
    once and then at most one report per PROGRESS_EVERY, not one per step."""

    async def test() -> None:
        seen: list[tuple[float, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, message))

        async with Client(handlers.server) as client:
            await client.call_tool("research", {"request": QUESTION})  # model and index
            started = time.monotonic()
            r = await client.call_tool(
                "research", {"request": QUESTION}, progress_callback=on_progress
            )
            elapsed = time.monotonic() - started
        assert not r.is_error
        assert seen and seen[0][0] == 1.0  # the first step, reported at once
        assert len(seen) <= 1 + elapsed / PROGRESS_EVERY, (len(seen), elapsed)

    run(test)


def test_cancelled_research_stops(handlers: KbmemMcp, example_kb: KnowledgeBase) -> None:
    head = example_kb.head()

    async def test() -> None:
        steps: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            steps.append(progress)

        async with Client(handlers.server) as client:
            with anyio.move_on_after(30) as scope:
                async with anyio.create_task_group() as tg:

                    async def call() -> None:
                        await client.call_tool(
                            "research",
                            {"request": QUESTION, "depth": 5, "max_pages": 32},
                            progress_callback=on_progress,
                        )

                    tg.start_soon(call)
                    while not steps:
                        await anyio.sleep(0.01)
                    tg.cancel_scope.cancel()  # the client sends notifications/cancelled
            assert not scope.cancelled_caught
            seen = len(steps)
            await anyio.sleep(1.0)
            assert len(steps) == seen  # no progress after the cancel: the research stopped
            r = await client.call_tool("list_pages", {"limit": 1})  # still serving
            assert not r.is_error

    run(test)
    assert example_kb.head() == head  # nothing committed


def test_resources_templates_and_prompts(handlers: KbmemMcp, example_kb: KnowledgeBase) -> None:
    async def test() -> None:
        async with Client(handlers.server) as client:
            listed = await client.list_resources()
            uris = [r.uri for r in listed.resources]
            assert uris[0] == "kbmem://MEMORY.md"
            page_uri = next(u for u in uris if u.startswith("kbmem://pages/"))
            text = (await client.read_resource(page_uri)).contents[0].text  # type: ignore[union-attr]
            assert text.startswith("---\nid: ")
            old = await client.read_resource(page_uri + "?at=HEAD~1")
            assert old.contents[0].text  # type: ignore[union-attr]
            index = await client.read_resource("kbmem://MEMORY.md")
            assert "Memory of tenant default" in index.contents[0].text  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="resource not found"):
                await client.read_resource("kbmem://pages/no-such/1")
            with pytest.raises(MCPError, match="resource not found"):
                await client.read_resource("https://example.com/")
            with pytest.raises(MCPError, match="invalid cursor"):
                await client.list_resources(cursor="12")
            templates = (await client.list_resource_templates()).resource_templates
            assert {t.uri_template for t in templates} >= {"kbmem://pages/{+page_id}{?at}"}
            prompts = {p.name for p in (await client.list_prompts()).prompts}
            assert "answer_from_memory" in prompts
            prompt = await client.get_prompt("answer_from_memory", {"question": QUESTION})
            text = prompt.messages[0].content.text  # type: ignore[union-attr]
            assert "research" in text and QUESTION in text
            with pytest.raises(MCPError, match="'question' is required"):
                await client.get_prompt("answer_from_memory", {})

    run(test)


def test_resource_list_pages_through_cursor(example_kb: KnowledgeBase) -> None:
    from kbmem.interfaces.mcp_sdk import server

    served = build(Memory(example_kb, TENANT))
    pages_before = server.RESOURCE_PAGE
    server.RESOURCE_PAGE = 5  # the example has more pages than that
    try:

        async def test() -> None:
            async with Client(served.server) as client:
                first = await client.list_resources()
                assert first.next_cursor is not None and len(first.resources) == 6
                second = await client.list_resources(cursor=first.next_cursor)
                names = {r.name for r in first.resources} & {r.name for r in second.resources}
                assert not names

        run(test)
    finally:
        server.RESOURCE_PAGE = pages_before
        served.close()


# -- a knowledge base with no index ------------------------------------------------------------


def test_first_call_on_a_kb_with_no_index(tmp_path: Path) -> None:
    """The index is built in the background from the start; a research call meanwhile gets
    progress at once and then either the briefing or a quick 'indexing' error, never
    silence; once built, research answers."""
    kb = init_kb(tmp_path / "kb")
    served = build(Memory(kb, TENANT), ready_wait=2.0)
    try:

        async def test() -> None:
            first_progress: list[float] = []
            started = time.monotonic()

            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                if not first_progress:
                    first_progress.append(time.monotonic() - started)

            async with Client(served.server) as client:
                deadline = time.monotonic() + 280
                while True:
                    call_started = time.monotonic()
                    r = await client.call_tool(
                        "research", {"request": QUESTION}, progress_callback=on_progress
                    )
                    assert time.monotonic() - call_started < 60
                    if not r.is_error:
                        break
                    assert "preparing this memory's index" in r.content[0].text  # type: ignore[union-attr]
                    assert time.monotonic() < deadline
                    await anyio.sleep(1)
                assert r.structured_content["evidence"]
            assert first_progress and first_progress[0] < 1.5

        run(test)
    finally:
        served.close()


# -- stdio ---------------------------------------------------------------------------------------


def _server(kb: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "kbmem", "--kb", str(kb), "mcp"],
        cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_stdio_serves_the_command(example_kb: KnowledgeBase, tmp_path: Path) -> None:
    async def test() -> None:
        with (tmp_path / "stderr.log").open("w") as errlog:
            from mcp.client.session import ClientSession
            from mcp.client.stdio import stdio_client

            async with (
                stdio_client(_server(example_kb.root), errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                hello = await session.initialize()
                assert hello.protocol_version == HANDSHAKE_PROTOCOL_VERSIONS[-1]
                assert hello.server_info.name == "kbmem"
                tools = await session.list_tools()
                assert {t.name for t in tools.tools} == {t.name for t in TOOLS}
                r = await session.call_tool("research", {"request": QUESTION})
                assert not r.is_error and r.structured_content["evidence"]

    run(test)


def test_stdio_negotiates_an_older_version_and_keeps_stdout_clean(
    example_kb: KnowledgeBase,
) -> None:
    """Raw lines, so that every byte on stdout is seen: only JSON-RPC, an older version is
    kept, and a version the SDK does not know is answered with the newest it speaks."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbmem", "--kb", str(example_kb.root), "mcp"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdin is not None and proc.stdout is not None

    def ask(message: dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        reply: dict[str, Any] = json.loads(proc.stdout.readline())
        assert reply.get("jsonrpc") == "2.0"
        return reply

    try:
        info = {"name": "raw", "version": "0"}
        hello = ask(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": info},
            }
        )
        assert hello["result"]["protocolVersion"] == "2025-03-26"
        assert set(hello["result"]["capabilities"]) >= {"tools", "resources", "prompts"}
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        r = ask(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": "onboarding buddy", "k": 1}},
            }
        )
        assert r["result"]["isError"] is False
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    rest = proc.stdout.read()
    assert rest == b""  # nothing else reached stdout

    unknown = subprocess.run(
        [sys.executable, "-m", "kbmem", "--kb", str(example_kb.root), "mcp"],
        cwd=ROOT,
        input=json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": info},
            }
        ).encode()
        + b"\n",
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    reply = json.loads(unknown.stdout.splitlines()[0])
    assert reply["result"]["protocolVersion"] == HANDSHAKE_PROTOCOL_VERSIONS[-1]


# -- Streamable HTTP -----------------------------------------------------------------------------


@pytest.fixture
def http_url(example_kb: KnowledgeBase) -> Iterator[tuple[str, str]]:
    """``/mcp`` on the HTTP API's own server (uvicorn on a loopback port), as ``kbmem serve``
    runs it: the SDK's session manager inside the app's lifespan."""
    token, _ = TokenStore(example_kb.state_dir).create(TENANT, "mcp test")
    server = MemoryServer(("127.0.0.1", 0), example_kb)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive()
        time.sleep(0.05)
    yield f"{server.url}/mcp", token
    server.shutdown()
    server.server_close()


def test_streamable_http_with_a_token(http_url: tuple[str, str], example_kb: KnowledgeBase) -> None:
    import httpx2

    url, token = http_url

    async def test() -> None:
        from mcp.client.session import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            reported: list[float] = []

            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                reported.append(progress)

            r = await session.call_tool(
                "research", {"request": QUESTION}, progress_callback=on_progress
            )
            assert not r.is_error and r.structured_content["evidence"], r.content
            assert reported
            res = await session.list_resources()
            assert res.resources[0].uri == "kbmem://MEMORY.md"
            prompts = await session.list_prompts()
            assert prompts.prompts

        # Another tenant's token reads that tenant's memory (empty here), not this one's.
        other = TokenStore(example_kb.state_dir).create("other", "mcp test")[0]
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {other}"}, timeout=60) as h,
            streamable_http_client(url, http_client=h) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            r = await session.call_tool("list_pages", {})
            assert not r.is_error and r.structured_content["total"] == 0

        async with httpx2.AsyncClient(timeout=30) as http:
            body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            for auth in ({}, {"Authorization": "Bearer kbm_wrong"}):
                answer = await http.post(url, json=body, headers=auth)
                assert answer.status_code == 401
                assert answer.headers["www-authenticate"] == "Bearer"
                assert answer.json()["error"]["code"] == "unauthorized"

    run(test)


def test_two_authorization_headers_are_refused_on_mcp_as_on_v1(http_url: tuple[str, str]) -> None:
    """``/mcp`` took the first of two ``Authorization`` headers while ``/v1`` refused them:
    a proxy in front may read the other. Both now answer the same 400 with the JSON error."""
    import httpx2

    url, token = http_url
    twice = [("Authorization", f"Bearer {token}"), ("Authorization", f"Bearer {token}")]
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    with httpx2.Client(timeout=30) as http:
        mcp = http.post(url, json=ping, headers=twice)
        v1 = http.get(url.removesuffix("/mcp") + "/v1/pages", headers=twice)
    assert mcp.status_code == 400 and mcp.headers["content-type"].startswith("application/json")
    assert mcp.json() == {
        "error": {
            "code": "invalid",
            "message": "send one Authorization header, not several",
            "field": None,
        }
    }
    assert v1.status_code == 400 and v1.json() == mcp.json()
