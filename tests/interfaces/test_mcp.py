"""``kbmem mcp`` as an MCP client sees it: the real command in a subprocess on a copy of the
example knowledge base, spoken to over its stdin and stdout in newline-delimited JSON-RPC.

One server for the default tenant serves most tests of this module (a server loads the
embedding model once, which costs seconds); the tests that stop a server, or that need another
tenant, start their own on the same knowledge base.
"""

from __future__ import annotations

import json
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from helpers.kbgit import ROOT, commit_edit, git, head, kbmem, status
from helpers.shapes import CAMEL_CASE, keys_of
from helpers.turns import commit_turn

from kbmem.interfaces.service import Memory
from kbmem.store.repository import KnowledgeBase

QUESTION = "Who is Femi Adeyemi's onboarding buddy?"
TOOLS = {
    "research",
    "search",
    "read_page",
    "list_pages",
    "page_history",
    "memorize_session",
    "chat",
    "list_turns",
    "audit_turn",
}
SHA = re.compile(r"[0-9a-f]{40}")


class McpClient:
    """A running ``kbmem mcp`` and the client side of the protocol: one JSON object per line
    each way. Every line the server prints on stdout goes through :meth:`receive`, which fails
    the test on anything that is not one JSON-RPC message."""

    def __init__(self, kb: Path, *options: str, log: Path):
        self.log = log
        self._err = log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kbmem", "--kb", str(kb), *options, "mcp"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
        )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._next_id = 0
        self.hello: dict[str, Any] = {}

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    @property
    def stderr(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def send_line(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_line(json.dumps(message).encode("utf-8"))

    def receive(self, timeout: float = 300) -> Any:
        line = self._lines.get(timeout=timeout)
        assert line is not None, f"the server closed stdout; stderr:\n{self.stderr}"
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        message = json.loads(line)
        for reply in message if isinstance(message, list) else [message]:
            assert reply["jsonrpc"] == "2.0" and ("result" in reply) != ("error" in reply)
        return message

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        reply = self.receive()
        assert reply["id"] == self._next_id, reply
        return reply

    def initialize(self, protocol: str = "2025-06-18") -> dict[str, Any]:
        reply = self.request(
            "initialize",
            {
                "protocolVersion": protocol,
                "capabilities": {},
                "clientInfo": {"name": "test_mcp", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply["result"]

    def call(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        """The result of a tool call (error results included)."""
        reply = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert "result" in reply, reply
        result = reply["result"]
        assert [c["type"] for c in result["content"]] == ["text"]
        return result

    def data(self, tool: str, /, **arguments: Any) -> Any:
        """The structured result of a tool call that must succeed; its text is the same JSON."""
        result = self.call(tool, **arguments)
        assert result["isError"] is False, result["content"][0]["text"]
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
        return result["structuredContent"]

    def error(self, tool: str, /, **arguments: Any) -> str:
        """The text of a tool call that must fail as a tool result (not a protocol error)."""
        result = self.call(tool, **arguments)
        assert result["isError"] is True, result
        return result["content"][0]["text"]

    def stop(self, how: str = "eof", timeout: float = 120) -> int:
        """Close stdin (``eof``) or send SIGTERM; the exit code. Nothing may be left unread."""
        if how == "eof":
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        else:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=timeout)
        self._err.close()
        assert self._lines.get(timeout=10) is None, "the server printed more than its replies"
        return code


def start(kb: Path, log: Path, *options: str) -> McpClient:
    client = McpClient(kb, *options, log=log)
    client.hello = client.initialize()
    return client


@pytest.fixture(scope="module")
def kb_root(example_kb_master: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the example knowledge base for this module's servers."""
    target = tmp_path_factory.mktemp("mcp") / "kb"
    shutil.copytree(example_kb_master, target, symlinks=True)
    return target


@pytest.fixture(scope="module")
def server(kb_root: Path) -> Iterator[McpClient]:
    """The module's server, for the default tenant."""
    client = start(kb_root, kb_root.parent / "default.log")
    yield client
    assert client.stop() == 0, client.stderr
    assert "Traceback" not in client.stderr


def session(session_id: str, texts: list[str], **extra: Any) -> dict[str, Any]:
    """A session in the Summit shape, one turn per text."""
    return {
        "sessionId": session_id,
        "title": "Harbour survey call",
        "turns": [
            {
                "role": "user",
                "content": text,
                "timestamp": f"2026-04-02T10:0{n}:00",
                "metadata": {"speaker": "Maya Lindqvist"},
            }
            for n, text in enumerate(texts)
        ],
        **extra,
    }


# -- the handshake -------------------------------------------------------------------------


def test_the_handshake_and_the_tools_each_with_a_schema(server: McpClient) -> None:
    hello = server.hello
    assert hello["protocolVersion"] == "2025-06-18"
    assert hello["capabilities"] == {"tools": {}}
    assert hello["serverInfo"]["name"] == "kbmem"
    assert hello["serverInfo"]["version"] == version("kbmem")
    assert "memory" in hello["instructions"] and "'default'" in hello["instructions"]
    # A version the server knows is echoed; another gets the newest it knows.
    assert server.initialize("2024-11-05")["protocolVersion"] == "2024-11-05"
    assert server.initialize("2099-01-01")["protocolVersion"] == "2025-06-18"

    tools = server.request("tools/list")["result"]["tools"]
    assert {t["name"] for t in tools} == TOOLS and len(tools) == len(TOOLS)
    for tool in tools:
        schema = tool["inputSchema"]
        assert len(tool["description"]) > 60, tool["name"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"]), tool["name"]
        for name, prop in schema["properties"].items():
            kinds = ("string", "integer", "boolean", "object")
            assert prop.get("type") in kinds, (tool["name"], name)
    by_name = {t["name"]: t["inputSchema"] for t in tools}
    assert by_name["research"]["required"] == ["request"]
    assert set(by_name["research"]["properties"]) == {
        "request",
        "max_pages",
        "depth",
        "max_tokens",
        "engine",
    }
    assert by_name["search"]["properties"]["tool"]["enum"] == ["hybrid", "bm25", "dense"]
    assert by_name["search"]["properties"]["query"]["maxLength"] == 20_000
    assert by_name["research"]["properties"]["request"]["maxLength"] == 20_000
    assert by_name["read_page"]["required"] == ["page_id"]
    assert by_name["chat"]["required"] == ["message"] and "chat_id" in by_name["chat"]["properties"]
    assert by_name["audit_turn"]["required"] == ["turn_id"]
    assert by_name["page_history"]["required"] == [] and by_name["list_pages"]["required"] == []
    stored = by_name["memorize_session"]["properties"]["session"]
    assert stored["required"] == ["turns"] and stored["additionalProperties"] is False
    assert stored["properties"]["turns"]["items"]["required"] == ["role", "content"]


# -- reading -------------------------------------------------------------------------------


def test_research_answers_from_the_roster_with_citations(server: McpClient, kb_root: Path) -> None:
    briefing = server.data("research", request=QUESTION)
    assert briefing["request"] == QUESTION and briefing["tenantId"] == "default"
    assert any("Tobias Ferrante" in f and "buddy" in f for f in briefing["keyFacts"])
    by_page = {e["pageId"]: e for e in briefing["evidence"]}
    assert {"notes/team-roster.md", "notes/onboarding.md"} <= set(by_page)
    roster = by_page["notes/team-roster.md"]
    assert "Tobias Ferrante" in roster["excerpt"] and "Femi Adeyemi" in roster["excerpt"]
    # The citation resolves in git: the excerpt is those lines of the page at that commit.
    cited = roster["interval"]
    assert (
        SHA.fullmatch(cited["commit"]) and cited["path"] == "tenants/default/notes/team-roster.md"
    )
    text = git(kb_root, "show", f"{cited['commit']}:{cited['path']}").splitlines()
    assert "Onboarding buddy" in "\n".join(text[cited["start"] - 1 : cited["end"]])
    assert roster["excerpt"].strip().splitlines()[-1] in text[cited["end"] - 1]
    # Budgets are passed through.
    small = server.data("research", request=QUESTION, max_pages=1, depth=0)
    assert len(small["pagesUsed"]) == 1 and small["reflectionSteps"] == 0


def test_read_page_list_pages_and_history(server: McpClient, kb_root: Path) -> None:
    page = server.data("read_page", page_id="notes/team-roster.md")
    assert page["id"] == "notes/team-roster.md"
    assert page["path"] == "tenants/default/notes/team-roster.md"
    assert page["text"] == git(kb_root, "show", f"{page['commit']}:{page['path']}")
    assert "Onboarding buddy" in page["text"] and "Tobias Ferrante" in page["text"]

    welcome = server.data("read_page", page_id="2026-03-02-welcome-and-offsite/1")
    assert welcome["header"]["session_id"] == "2026-03-02-welcome-and-offsite"
    assert "I'm your onboarding buddy." in welcome["text"]

    listed = {p["id"]: p for p in server.data("list_pages")["pages"]}
    assert {"notes/team-roster.md", "notes/onboarding.md", welcome["id"]} <= set(listed)
    assert listed[welcome["id"]]["memo"] and listed[welcome["id"]]["problem"] is None

    history = server.data("page_history", page_id="notes/team-roster.md")
    assert history["page_id"] == "notes/team-roster.md" and history["commits"]
    first = history["commits"][-1]["commit"]
    assert git(kb_root, "log", "--format=%H", "--", page["path"]).split()[-1] == first
    old = server.data("read_page", page_id="notes/team-roster.md", at=first)
    assert old["commit"] == first
    everything = server.data("page_history", limit=3)["commits"]
    assert len(everything) == 3 and all(SHA.fullmatch(c["commit"]) for c in everything)
    # Each commit's whole message, body and trailers, as `kbmem log --json` gives it.
    for commit in history["commits"] + everything:
        whole = git(kb_root, "log", "-1", "--format=%B", commit["commit"]).strip()
        assert commit["message"] == whole and whole.startswith(commit["subject"])
    assert any("\n\n" in c["message"] for c in history["commits"] + everything)


def test_one_pages_history_reads_on_from_a_cursor(server: McpClient, kb_root: Path) -> None:
    # As the whole memory's does: each window's next_before is the next one's before.
    other = head(kb_root)
    note = kb_root / "tenants" / "default" / "notes" / "berths.md"
    for n in range(5):
        note.write_text(f"---\ntitle: Berths\n---\nBerth {n} is free.\n")
        git(kb_root, "add", "--", str(note))
        git(kb_root, "commit", "-q", "-m", f"Free berth {n}")
    everything = server.data("page_history", page_id="notes/berths.md")["commits"]
    assert [c["subject"] for c in everything] == [f"Free berth {n}" for n in range(4, -1, -1)]
    seen, before = [], None
    while True:
        window = server.data("page_history", page_id="notes/berths.md", limit=2, before=before)
        assert window["page_id"] == "notes/berths.md" and len(window["commits"]) <= 2
        seen, before = seen + window["commits"], window["next_before"]
        assert (before is None) is (not window["more"])
        if before is None:
            break
    assert seen == everything
    problem = server.error("page_history", page_id="notes/berths.md", before=other)
    assert problem == "page_history: before: is not a commit of this page's history"


def test_search_finds_intervals(server: McpClient) -> None:
    found = server.data("search", query="tide-window scheduler owner", tool="bm25", k=3)
    assert found["tool"] == "bm25" and 1 <= len(found["hits"]) <= 3
    assert any("tide-window scheduler" in h["excerpt"] for h in found["hits"])
    assert all(h["tenantId"] == "default" for h in found["hits"])
    # Some clients send whole numbers as 3.0; optional arguments sent as null are left out.
    again = server.data("search", query="tide-window scheduler owner", tool=None, k=3.0)
    assert again["tool"] == "hybrid" and len(again["hits"]) == 3


def test_search_hits_are_camel_case_throughout_as_briefings_are(server: McpClient) -> None:
    # As over HTTP (test_api): a hit's interval is a briefing's evidence interval.
    found = server.data("search", query="onboarding buddy offsite", k=8)
    assert found["hits"] and all(CAMEL_CASE.fullmatch(k) for k in keys_of(found)), keys_of(found)
    assert any(h["interval"]["turnIds"] for h in found["hits"])
    evidence = server.data("research", request=QUESTION)["evidence"][0]
    assert all(set(evidence["interval"]) <= set(h["interval"]) for h in found["hits"])


@pytest.mark.parametrize(
    ("k", "words"),
    [(2.5, "got number"), (True, "got boolean"), ("3", "got string"), (1e300, "between")],
    ids=["half", "bool", "text", "huge"],
)
def test_a_number_that_is_not_whole_is_refused(server: McpClient, k: Any, words: str) -> None:
    # The rule of the HTTP API too (test_api): 3.0 is whole, 2.5 is not.
    problem = server.error("search", query="scheduler", k=k)
    assert problem.startswith("search: k: ") and words in problem
    assert len(server.data("list_pages", limit=2.0)["pages"]) == 2


def test_a_page_broken_by_hand_is_an_error_unless_read_raw(
    server: McpClient, kb_root: Path
) -> None:
    """A page whose header was broken by hand is a tool error naming the problem; with raw it
    comes as stored, with the problem, for the calling agent to repair it."""
    note = kb_root / "tenants" / "default" / "notes" / "hand-broken.md"
    note.write_text("---\ntitle: [unclosed\n---\nThe body.\n")
    git(kb_root, "add", "--", str(note))
    git(kb_root, "commit", "-q", "-m", "Break a header by hand")
    try:
        problem = server.error("read_page", page_id="notes/hand-broken.md")
        assert problem.startswith("read_page: ") and "notes/hand-broken.md" in problem
        assert problem.endswith("(read_page with raw: true gives the page as stored, to repair it)")
        page = server.data("read_page", page_id="notes/hand-broken.md", raw=True)
        assert page["text"] == note.read_text() and page["header"] is None
        assert page["problem"] and page["problem"] in problem
        roster = server.data("read_page", page_id="notes/team-roster.md", raw=True)
        assert roster["problem"] is None and roster["header"]["title"]
        assert "raw" in server.error("read_page", page_id="notes/hand-broken.md", raw="yes")
    finally:
        git(kb_root, "rm", "-q", "--", str(note))
        git(kb_root, "commit", "-q", "-m", "Remove the broken note")


# -- errors --------------------------------------------------------------------------------


def test_a_bad_page_id_is_a_tool_error_and_the_server_goes_on(server: McpClient) -> None:
    problem = server.error("read_page", page_id="../x")
    assert "'../x'" in problem and problem.startswith("read_page: page_id: ")
    missing = server.error("read_page", page_id="notes/no-such-note.md")
    assert "no page 'notes/no-such-note.md'" in missing
    escape = server.error("read_page", page_id="../../etc/passwd.md")
    assert "page_id: '..' is not a file or folder name" in escape
    assert server.request("ping")["result"] == {}
    assert server.data("read_page", page_id="notes/onboarding.md")["id"] == "notes/onboarding.md"
    assert "Traceback" not in server.stderr


def test_a_damaged_turn_is_a_tool_error_naming_the_file(server: McpClient, kb_root: Path) -> None:
    folder = commit_turn(KnowledgeBase(kb_root), "hand", 1)
    commit_edit(kb_root, folder + "tool_calls.jsonl", lambda old: old + b'{"broken": ')
    problem = f"{folder}tool_calls.jsonl: line 2: malformed JSON (Expecting value at column 12)"
    assert server.error("audit_turn", turn_id="hand/1") == f"audit_turn: {problem}"
    (listed,) = server.data("list_turns", chat_id="hand")["turns"]
    assert (listed["status"], listed["problem"]) == ("damaged", problem)
    assert "has no chat 'nope'" in server.error("list_turns", chat_id="nope")
    assert "Traceback" not in server.stderr


def test_arguments_that_do_not_fit_the_schema_name_the_field(server: McpClient) -> None:
    assert server.error("search", query="scheduler", k="5") == (
        "search: k: must be an integer, got string"
    )
    assert "limit" in server.error("search", query="scheduler", limit=5)
    assert server.error("research") == "research: request: is required"
    assert "tool: must be one of" in server.error("search", query="x", tool="fuzzy")
    assert "between 1 and 100" in server.error("search", query="x", k=0)
    assert "request: must not be empty" in server.error("research", request="")
    long = server.error("search", query="w " * 10_001)
    assert long == "search: query: longer than 20000 characters"
    nested = server.error("memorize_session", session={"turns": [{"role": "user"}]})
    assert "session.turns[0].content: is required" in nested
    typo = server.error("memorize_session", session={"session_id": "x", "turns": []})
    assert "session.session_id" in typo
    assert "turn_id" in server.error("audit_turn", turn_id=7)
    # A field is named as the tool's schema names it, never as kbmem's core does ('pageId',
    # 'TURN'): the model fixes the argument the message names.
    for tool, arguments, field in (
        ("page_history", {"page_id": "../x"}, "page_id"),
        ("audit_turn", {"turn_id": "x"}, "turn_id"),
        ("audit_turn", {"turn_id": "a/0"}, "turn_id"),
        ("audit_turn", {"turn_id": "../x/1"}, "turn_id"),
        ("search", {"query": "\ud800"}, "query"),
        (
            "memorize_session",
            {"session": {"turns": [{"role": "u", "content": "\ud800"}]}},
            "session.turns[0].content",
        ),
    ):
        result = server.call(tool, **arguments)
        assert result["isError"] and result["structuredContent"]["error"]["field"] == field
        assert result["content"][0]["text"].startswith(f"{tool}: {field}: "), result


def test_protocol_errors_are_answered_and_the_server_goes_on(server: McpClient) -> None:
    server.send_line(b'{"jsonrpc": "2.0", "id": 1, "method": ')
    reply = server.receive()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    server.send_line(b"\xff\xfe not utf-8")
    assert server.receive()["error"]["code"] == -32700

    unknown = server.request("resources/list")
    assert unknown["error"]["code"] == -32601 and "resources/list" in unknown["error"]["message"]

    server.send({"jsonrpc": "1.0", "id": "a", "method": "ping"})
    assert server.receive() == {
        "jsonrpc": "2.0",
        "id": "a",
        "error": {"code": -32600, "message": 'jsonrpc must be "2.0"'},
    }
    server.send({"jsonrpc": "2.0", "id": 9})
    reply = server.receive()
    assert reply["id"] == 9 and reply["error"]["code"] == -32600
    server.send(42)
    reply = server.receive()
    assert reply["id"] is None and reply["error"]["code"] == -32600

    no_tool = server.request("tools/call", {"name": "forget_everything", "arguments": {}})
    assert no_tool["error"]["code"] == -32602 and "forget_everything" in no_tool["error"]["message"]
    listed = server.request("tools/call", {"name": "search", "arguments": ["x"]})
    assert listed["error"]["code"] == -32602

    # Notifications, known or not, get no reply: the next line out answers the ping after them.
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    server.send({"jsonrpc": "2.0", "method": "notifications/no-such-thing", "params": {"x": 1}})
    server.send({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "list_pages"}})
    assert server.request("ping") == {"jsonrpc": "2.0", "id": server._next_id, "result": {}}

    # A batch gets one array of replies, notifications left out.
    server.send(
        [
            {"jsonrpc": "2.0", "id": "b1", "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": "b2", "method": "nope"},
        ]
    )
    batch = server.receive()
    assert [r["id"] for r in batch] == ["b1", "b2"] and batch[1]["error"]["code"] == -32601
    assert "Traceback" not in server.stderr


# -- writing -------------------------------------------------------------------------------


def test_memorize_session_commits_and_refuses_another_tenant(
    server: McpClient, kb_root: Path
) -> None:
    texts = [
        "The Quillfeather harbour survey is booked for Thursday 9 April with Callum.",
        "Noted: Quillfeather survey, Thursday 9 April 2026, Callum MacInnes.",
    ]
    stored = server.data("memorize_session", session=session("mcp-harbour-survey", texts))
    assert stored["status"] == "created" and stored["tenantId"] == "default"
    assert stored["pages"] == ["mcp-harbour-survey/1"]
    assert stored["commit"] == head(kb_root)
    message = git(kb_root, "log", "-1", "--format=%B")
    assert "Kbmem-Session: mcp-harbour-survey" in message and "Kbmem-Tenant: default" in message
    page = git(kb_root, "show", "HEAD:tenants/default/pages/mcp-harbour-survey/1.md")
    assert all(
        f"| Maya Lindqvist | 2026-04-02T10:0{n}:00\n{t}\n" in page for n, t in enumerate(texts)
    )
    assert status(kb_root) == ""
    listed = {p["id"]: p for p in server.data("list_pages")["pages"]}
    assert listed["mcp-harbour-survey/1"]["title"] == "Harbour survey call"
    hits = server.data("search", query="Quillfeather", tool="bm25", k=5)["hits"]
    assert hits and {h["pageId"] for h in hits} == {"mcp-harbour-survey/1"}
    # The same session again changes nothing.
    again = server.data("memorize_session", session=session("mcp-harbour-survey", texts))
    assert again["status"] == "unchanged" and head(kb_root) == stored["commit"]

    # A session that names another tenant is refused whole, and nothing is committed.
    before = head(kb_root)
    foreign = session("mcp-foreign", ["Secret plans for another tenant."], tenantId="other")
    problem = server.error("memorize_session", session=foreign)
    assert "tenantId" in problem and "'other'" in problem and "'default'" in problem
    assert head(kb_root) == before and status(kb_root) == ""
    assert "mcp-foreign/1" not in {p["id"] for p in server.data("list_pages")["pages"]}
    assert not (kb_root / "tenants" / "other" / "pages" / "mcp-foreign").exists()


def test_a_server_for_another_tenant_sees_none_of_the_default_tenants_pages(
    server: McpClient, kb_root: Path
) -> None:
    other = start(kb_root, kb_root.parent / "other.log", "--tenant", "other")
    try:
        assert "'other'" in other.hello["instructions"]
        assert other.data("list_pages") == {
            "pages": [],
            "total": 0,
            "next_offset": None,
            "commit": head(kb_root),
        }
        assert "no page 'notes/team-roster.md'" in other.error(
            "read_page", page_id="notes/team-roster.md"
        )
        assert other.data("search", query="Tobias Ferrante onboarding", k=5)["hits"] == []
        briefing = other.data("research", request=QUESTION)
        assert briefing["tenantId"] == "other" and briefing["evidence"] == []
        assert not any("Tobias" in f for f in briefing["keyFacts"])
        assert other.data("page_history") == {
            "page_id": None,
            "commits": [],
            "more": False,
            "next_before": None,
        }

        # Its own session goes to its own folder; the default tenant cannot read it.
        stored = other.data(
            "memorize_session", session=session("other-plans", ["Nightjar ships in May."])
        )
        assert stored["tenantId"] == "other"
        assert "tenants/other/pages/other-plans/1.md" in git(
            kb_root, "show", "--name-only", "--format=", stored["commit"]
        )
        assert [p["id"] for p in other.data("list_pages")["pages"]] == ["other-plans/1"]
    finally:
        assert other.stop() == 0, other.stderr
    assert "other-plans/1" not in {p["id"] for p in server.data("list_pages")["pages"]}
    assert "no page" in server.error("read_page", page_id="other-plans/1")
    hits = server.data("search", query="Nightjar", tool="bm25", k=5)["hits"]
    assert hits == []


def test_lists_come_a_window_at_a_time(server: McpClient, kb_root: Path) -> None:
    # A tenant of 100+ pages: one long session, split into pages as it is memorized.
    bulk = start(kb_root, kb_root.parent / "bulk.log", "--tenant", "bulk")
    try:
        turns = [
            f"Berth {n} log. " + "The crane was inspected and found in order. " * 22
            for n in range(1200)
        ]
        long = {"sessionId": "bulk-log", "turns": [{"role": "user", "content": t} for t in turns]}
        stored = bulk.data("memorize_session", session=long)
        assert len(stored["pages"]) > 100
        first = bulk.data("list_pages")
        assert len(first["pages"]) == 100 and first["total"] == len(stored["pages"])
        assert first["next_offset"] == 100
        seen, offset = [p["id"] for p in first["pages"]], first["next_offset"]
        while offset is not None:
            more = bulk.data("list_pages", offset=offset, limit=40)
            assert 0 < len(more["pages"]) <= 40
            seen, offset = seen + [p["id"] for p in more["pages"]], more["next_offset"]
        assert sorted(seen) == sorted(stored["pages"]) and len(set(seen)) == len(seen)
        past = bulk.data("list_pages", offset=10_000)
        assert past["pages"] == [] and past["next_offset"] is None
    finally:
        assert bulk.stop() == 0, bulk.stderr
    history = server.data("page_history", limit=1)
    assert len(history["commits"]) == 1 and history["more"] is True
    everything = server.data("page_history", limit=1000)
    assert everything["more"] is False and everything["next_before"] is None
    # next_before reads on, a commit past the first.
    rest = server.data("page_history", limit=1000, before=history["next_before"])["commits"]
    assert history["commits"] + rest == everything["commits"]
    assert "before" in server.error("page_history", before="HEAD~1")
    assert "limit" in server.error("list_turns", limit=0)


# -- chats ---------------------------------------------------------------------------------


def turns_trailers(kb: Path) -> str:
    return git(kb, "log", "--format=%(trailers:key=Kbmem-Turns,valueonly)")


def test_a_chat_is_committed_when_stdin_closes(kb_root: Path) -> None:
    client = start(kb_root, kb_root.parent / "chat.log")
    first = client.data("chat", message=QUESTION)
    chat_id = first["chat_id"]
    assert first["turn"] == 1 and first["turn_id"] == f"{chat_id}/1"
    assert first["status"] == "complete" and "Tobias Ferrante" in first["answer"]
    assert first["citations"]
    second = client.data("chat", message="And who owns the tide-window scheduler?", chat_id=chat_id)
    assert second["chat_id"] == chat_id and second["turn"] == 2
    turns = client.data("list_turns", chat_id=chat_id)["turns"]
    assert [(t["n"], t["committed"]) for t in turns] == [(1, False), (2, False)]
    audit = client.data("audit_turn", turn_id=first["turn_id"])
    assert audit["turn"] == first["turn_id"] and audit["question"] == QUESTION
    assert any(c["name"] == "research" and c["intervals"] for c in audit["tool_calls"])
    assert f"{chat_id} 1-2" not in turns_trailers(kb_root)

    assert client.stop("eof") == 0, client.stderr
    assert f"{chat_id} 1-2" in turns_trailers(kb_root)
    assert status(kb_root) == ""
    listed = kbmem("--kb", str(kb_root), "turns", chat_id, "--json")
    assert listed.returncode == 0, listed.stderr
    assert [(t["n"], t["committed"]) for t in json.loads(listed.stdout)] == [(1, True), (2, True)]


def test_sigterm_commits_open_chats_and_exits_cleanly(kb_root: Path) -> None:
    client = start(kb_root, kb_root.parent / "sigterm.log")
    reply = client.data("chat", message="Where is the April offsite?")
    assert client.stop("sigterm") == 0, client.stderr
    assert f"{reply['chat_id']} 1-1" in turns_trailers(kb_root)
    assert "Traceback" not in client.stderr


def test_a_chat_started_over_http_and_closed_empty_is_known_here_too(kb_root: Path) -> None:
    """A chat a client of ``kbmem serve`` started and closed before its first turn: the MCP
    server lists it with no turns, as the HTTP API does, and continues it from turn 1."""
    memory = Memory(KnowledgeBase(kb_root), "default")
    chat_id, _ = memory.open_chat()  # what POST /v1/chats does
    memory.close_chat(chat_id)
    client = start(kb_root, kb_root.parent / "empty-chat.log")
    listed = client.data("list_turns", chat_id=chat_id)
    assert listed == {"turns": [], "total": 0, "next_offset": None}
    reply = client.data("chat", message="Who owns sync?", chat_id=chat_id)
    assert reply["turn_id"] == f"{chat_id}/1", reply
    assert client.stop("eof") == 0, client.stderr
    assert f"{chat_id} 1-1" in turns_trailers(kb_root)


def test_a_chat_id_no_chat_has_is_a_tool_error_naming_it(server: McpClient, kb_root: Path) -> None:
    """A model passes chat_id to continue a chat: one it made up is not a new chat opened
    silently under that id. Without chat_id a new chat starts (test above)."""
    before = head(kb_root)
    result = server.call("chat", message="Who owns sync?", chat_id="invented")
    assert result["isError"] is True and result["structuredContent"]["error"]["type"] == "NotFound"
    assert "chat: tenant 'default' has no chat 'invented'" in result["content"][0]["text"]
    assert not list((kb_root / ".kbmem" / "journal").rglob("invented*"))
    assert "has no chat 'invented'" in server.error("list_turns", chat_id="invented")
    problem = server.error("chat", message="hi", chat_id="../x")
    assert problem.startswith("chat: chat_id: '../x' is not a safe id"), problem
    assert head(kb_root) == before and "Traceback" not in server.stderr


def test_a_missing_knowledge_base_fails_before_serving(tmp_path: Path) -> None:
    done = kbmem("--kb", str(tmp_path / "nowhere"), "mcp")
    assert done.returncode != 0 and done.stdout == ""
    assert "nowhere" in done.stderr
