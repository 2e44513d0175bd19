"""The HTTP API (``kbmem serve``): a real server on a loopback port over a real git knowledge
base, spoken to with http.client as another agent would."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

import pytest
from helpers.kbgit import commit_edit, git, kbmem, summit_session
from helpers.shapes import CAMEL_CASE, keys_of
from helpers.turns import commit_chat, commit_turn
from prometheus_client.parser import text_string_to_metric_families

from kbmem.agent import journal
from kbmem.agent.records import TurnRecord
from kbmem.cli import main
from kbmem.interfaces.server import MemoryServer
from kbmem.interfaces.tokens import TokenStore
from kbmem.store import pagestore
from kbmem.store import repository as store
from kbmem.store.repository import CommitInfo, KnowledgeBase

ROSTER = "notes/team-roster.md"


class Client:
    def __init__(self, server: MemoryServer, token: str | None):
        self.host, self.port = server.server_address[:2]
        self.token = token

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any, http.client.HTTPResponse]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        sent = dict(headers or {})
        if self.token:
            sent["Authorization"] = f"Bearer {self.token}"
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        if data is not None:
            sent.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=data, headers=sent)
        response = conn.getresponse()
        payload = response.read()
        conn.close()
        kind = response.headers.get_content_type()
        return (
            response.status,
            json.loads(payload) if kind == "application/json" and method != "HEAD" else payload,
            response,
        )


@pytest.fixture
def served(example_kb: KnowledgeBase) -> Iterator[MemoryServer]:
    server = MemoryServer(("127.0.0.1", 0), example_kb)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def client(server: MemoryServer, tenant: str = "default") -> Client:
    token, _ = TokenStore(server.kb.state_dir).create(tenant, "test")
    return Client(server, token)


def new_chat(api: Client) -> str:
    """A new chat's id, as the server gives it."""
    status, opened, _ = api.call("POST", "/v1/chats")
    assert status == 201, opened
    return opened["chat_id"]


def test_no_request_gets_in_without_a_valid_token(served: MemoryServer) -> None:
    status, body, _ = Client(served, None).call("GET", "/v1/health")
    assert status == 200 and body["status"] == "ok"
    status, body, response = Client(served, None).call("GET", "/v1/pages")
    assert status == 401 and response.headers["WWW-Authenticate"] == "Bearer"
    assert "Authorization: Bearer" in body["error"]["message"]
    status, body, _ = Client(served, "kbm_not-a-token").call("GET", "/v1/pages")
    assert status == 401 and body["error"]["message"] == "the token is not valid"
    # A refused POST's body is never read, nor anything written.
    head = served.kb.head()
    status, _, _ = Client(served, None).call(
        "POST", "/v1/sessions", summit_session(None, ["y"], None, "x")
    )
    assert status == 401 and served.kb.head() == head


def test_the_token_decides_the_tenant(served: MemoryServer) -> None:
    default, other = client(served), client(served, "other")
    status, created, _ = other.call(
        "POST", "/v1/sessions", summit_session(None, ["Our code is 4417."], None, "Secret")
    )
    assert status == 201 and created["tenantId"] == "other"
    secret_page = created["pages"][0]
    assert [p["id"] for p in other.call("GET", "/v1/pages")[1]["pages"]] == [secret_page]
    # The default tenant sees none of it: not in its list, its page, search or history.
    pages = {p["id"] for p in default.call("GET", "/v1/pages")[1]["pages"]}
    assert ROSTER in pages and secret_page not in pages
    status, body, _ = default.call("GET", f"/v1/pages/{secret_page}")
    assert status == 404, body
    hits = default.call("POST", "/v1/search", {"query": "code 4417", "tool": "bm25"})[1]["hits"]
    assert all(h["tenantId"] == "default" and "4417" not in h["excerpt"] for h in hits)
    subjects = [c["subject"] for c in default.call("GET", "/v1/history")[1]["commits"]]
    assert subjects and not any("Secret" in s for s in subjects)
    # A session that names another tenant is refused, and nothing is committed.
    head = served.kb.head()
    status, body, _ = default.call(
        "POST", "/v1/sessions", summit_session(None, ["hi"], "other", "Sneak")
    )
    assert status == 400 and body["error"]["field"] == "tenantId"
    assert served.kb.head() == head


def test_a_session_that_starts_a_tenant_says_so(served: MemoryServer) -> None:
    fresh, default = client(served, "fresh"), client(served)
    kiln = summit_session(None, ["The kiln fires at dawn."], None, "Kiln")
    status, first, _ = fresh.call("POST", "/v1/sessions", kiln)
    assert status == 201 and first["tenantId"] == "fresh" and first["tenantCreated"] is True
    status, again, _ = fresh.call("POST", "/v1/sessions", kiln)
    assert status == 200 and again["status"] == "unchanged" and again["tenantCreated"] is False
    glaze = summit_session(None, ["Glaze is cobalt."], None, "Glaze")
    status, second, _ = fresh.call("POST", "/v1/sessions", glaze)
    assert status == 201 and second["tenantCreated"] is False
    status, known, _ = default.call("POST", "/v1/sessions", glaze)
    assert status == 201 and known["tenantCreated"] is False


def test_of_sessions_that_start_a_tenant_at_once_one_created_it(served: MemoryServer) -> None:
    api, answers = client(served, "burst"), []

    def post(n: int) -> None:
        session = summit_session(f"s{n}", [f"Item {n} is ready."], None, f"Item {n}")
        answers.append(api.call("POST", "/v1/sessions", session)[:2])

    threads = [threading.Thread(target=post, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [status for status, _ in answers] == [201] * 4, answers
    assert sorted(body["tenantCreated"] for _, body in answers) == [False, False, False, True]


@pytest.mark.parametrize(
    "path",
    ["/v1/pages/..%2F..%2Fkbmem.yaml", "/v1/pages/../../kbmem.yaml", "/v1/pages/%2Fetc%2Fpasswd"],
)
def test_path_like_page_ids_are_refused(served: MemoryServer, path: str) -> None:
    status, body, _ = client(served).call("GET", path)
    assert status in (400, 404), body
    assert "error" in body and "default_tenant" not in json.dumps(body)


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/v1/pages/..%2Fx", "page_id"),
        ("/v1/history?page=..%2Fx", "page"),
        ("/v1/turns?chat=..%2Fx", "chat"),
        ("/v1/turns/a/0", "turn_id"),
        ("/v1/turns/..%2Fx/1", "turn_id"),
    ],
    ids=["page", "history", "turns", "turn-n", "turn-chat"],
)
def test_a_bad_id_is_named_as_the_request_named_it(
    served: MemoryServer, path: str, field: str
) -> None:
    status, body, _ = client(served).call("GET", path)
    assert status == 400 and body["error"]["field"] == field, body
    assert body["error"]["message"] != "" and not body["error"]["message"].startswith(field)


def test_pages_history_and_a_page_at_a_revision(served: MemoryServer) -> None:
    api = client(served)
    status, page, _ = api.call("GET", f"/v1/pages/{ROSTER}")
    assert status == 200 and page["header"]["title"] == "Team roster"
    assert "Tobias Ferrante" in page["text"] and page["path"].endswith(ROSTER)
    commits = api.call("GET", f"/v1/history?page={ROSTER}")[1]["commits"]
    assert commits and all(re.fullmatch(r"[0-9a-f]{40}", c["commit"]) for c in commits)
    first = commits[-1]["commit"]
    status, old, _ = api.call("GET", f"/v1/pages/{ROSTER}?at={first}")
    assert status == 200 and old["commit"] == first
    status, body, _ = api.call("GET", "/v1/history?limit=x")
    assert status == 400 and body["error"]["field"] == "limit"
    status, body, _ = api.call("GET", f"/v1/pages/{ROSTER}?at=--output=/tmp/x")
    assert status == 400 and body["error"]["field"] == "at"


def page_ids(body: dict[str, Any]) -> list[str]:
    return [p["id"] for p in body["pages"]]


def test_pages_come_a_window_at_a_time_from_one_commit(served: MemoryServer) -> None:
    reader, writer = client(served, "bulk"), client(served, "bulk")
    # 100+ pages: one long session, split into pages as it is memorized.
    turns = [f"Berth {n} log. " + "The crane was inspected. " * 40 for n in range(1200)]
    status, stored, _ = writer.call(
        "POST",
        "/v1/sessions",
        {"sessionId": "bulk-log", "turns": [{"role": "user", "content": t} for t in turns]},
    )
    assert status == 201 and len(stored["pages"]) > 100
    first = reader.call("GET", "/v1/pages")[1]
    assert len(first["pages"]) == 100 and first["total"] == len(stored["pages"])
    assert first["next_offset"] == 100 and first["commit"] == served.kb.head()
    # Another client memorizes a session whose pages sort first, between every two windows:
    # read at the first window's commit, the list neither shifts nor repeats.
    seen, offset, n = page_ids(first), first["next_offset"], 0
    while offset is not None:
        n += 1
        early = summit_session(f"aaa-{n}", [f"Note {n}."], "bulk")
        assert writer.call("POST", "/v1/sessions", early)[0] == 201
        more = reader.call("GET", f"/v1/pages?at={first['commit']}&offset={offset}&limit=7")[1]
        assert 0 < len(more["pages"]) <= 7 and more["commit"] == first["commit"]
        seen, offset = seen + page_ids(more), more["next_offset"]
    assert seen == sorted(stored["pages"])  # ordered by page id, each once
    latest = reader.call("GET", "/v1/pages?limit=1000")[1]
    assert latest["total"] == len(stored["pages"]) + n and latest["next_offset"] is None
    assert page_ids(latest)[:n] == sorted(f"aaa-{k}/1" for k in range(1, n + 1))
    past = reader.call("GET", "/v1/pages?offset=10000")[1]
    assert past["pages"] == [] and past["next_offset"] is None


def test_a_window_of_pages_reads_only_its_own_pages(
    served: MemoryServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages are counted from the commit's tree and only a window's are read (536 pages cost
    0.15 s a window when every window read them all); a page whose header was broken by hand
    is listed with its problem, not left out of the window and the count."""
    notes = {
        f"tenants/many/notes/n{n:03d}.md": f"---\ntitle: Note {n}\n---\nBody {n}.\n".encode()
        for n in range(150)
    }
    notes["tenants/many/notes/n005.md"] = b"---\ntitle: [never closed\n---\nBody.\n"
    served.kb.commit_files(notes, "Write 150 notes")
    api, read = client(served, "many"), []
    parse = pagestore.parse_page
    monkeypatch.setattr(pagestore, "parse_page", lambda *a: read.append(a[1]) or parse(*a))
    body = api.call("GET", "/v1/pages?limit=10")[1]
    assert body["total"] == 150 and body["next_offset"] == 10
    assert page_ids(body) == [f"notes/n{n:03d}.md" for n in range(10)]
    assert len(read) == 10, len(read)
    broken = body["pages"].pop(5)
    status, unreadable, _ = api.call("GET", "/v1/pages/notes/n005.md")
    assert status == 422 and broken["problem"] == unreadable["error"]["message"]
    assert broken["title"] == "" and all(p["problem"] is None for p in body["pages"])
    assert [p["title"] for p in body["pages"]][:5] == [f"Note {n}" for n in range(5)]


def test_turns_and_history_come_a_window_at_a_time(served: MemoryServer) -> None:
    api = client(served)
    for n in range(1, 21):  # turn n of chats a and b started at the same time
        commit_turn(served.kb, "a", n)
        commit_turn(served.kb, "b", n)
    order = [f"{chat}/{n}" for n in range(1, 21) for chat in "ab"]
    seen, offset = [], 0
    while offset is not None:
        body = api.call("GET", f"/v1/turns?limit=15&offset={offset}")[1]
        assert body["total"] == 40 and len(body["turns"]) == min(15, 40 - offset)
        seen, offset = seen + [t["turn"] for t in body["turns"]], body["next_offset"]
    assert seen == order  # by start, then chat id
    one = api.call("GET", "/v1/turns?chat=b&offset=19")[1]
    assert [t["turn"] for t in one["turns"]] == ["b/20"] and one["total"] == 20
    # History: the newest 50 commits unless limit says otherwise; more says there are older.
    history = api.call("GET", "/v1/history")[1]
    assert len(history["commits"]) == 50 and history["more"] is True
    assert history["commits"][0]["commit"] == served.kb.head()
    everything = api.call("GET", "/v1/history?limit=1000")[1]
    assert len(everything["commits"]) > 50 and everything["more"] is False
    roster = api.call("GET", f"/v1/history?page={ROSTER}&limit=1")[1]
    assert roster["page_id"] == ROSTER and len(roster["commits"]) == 1


def test_a_window_of_a_long_chat_reads_only_its_own_turns(
    served: MemoryServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which turns a chat has comes from git's trees; a window of 10 of a chat's 400 turns
    reads the files of 10 turns (three each), not those of all 400. Across chats, the turns
    up to the window's end are read, for their start times, and no more."""
    commit_chat(served.kb, "long", 400)
    commit_chat(served.kb, "later", 3, started=1000.0)
    api, read = client(served), []
    read_blob = served.kb.read_blob
    monkeypatch.setattr(served.kb, "read_blob", lambda blob: read.append(blob) or read_blob(blob))
    body = api.call("GET", "/v1/turns?chat=long&limit=10&offset=150")[1]
    assert [t["turn"] for t in body["turns"]] == [f"long/{n}" for n in range(151, 161)]
    assert body["total"] == 400 and body["next_offset"] == 160
    assert body["turns"][0]["question"] == "Question 151?" and body["turns"][0]["committed"]
    assert len(read) == 3 * 10, len(read)
    read.clear()
    body = api.call("GET", "/v1/turns?limit=5")[1]
    assert [t["turn"] for t in body["turns"]] == [f"long/{n}" for n in range(1, 6)]
    assert body["total"] == 403 and body["next_offset"] == 5
    assert len(read) <= 3 * (5 + 2), len(read)  # the window, and the next turn of each chat
    body = api.call("GET", "/v1/turns?offset=399")[1]
    assert [t["turn"] for t in body["turns"]] == ["long/400", "later/1", "later/2", "later/3"]
    assert body["next_offset"] is None


def test_an_open_chats_listing_parses_only_the_turns_git_lacks(
    served: MemoryServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An open chat's journal holds every turn since it opened, committed in batches or not:
    a listing parses from it only the turns not committed yet."""
    served.kb.settings.data["chat"]["batch_turns"] = 2
    api = client(served)
    chat_id = new_chat(api)
    for question in ("Who owns sync?", "Who is the pilot?", "When is launch?") * 2:
        path = f"/v1/chats/{chat_id}/messages"
        assert api.call("POST", path, {"message": question})[0] == 200
    # Turns 1-6 committed two by two; the journal holds all six lines.
    lines = (served.kb.state_dir / "journal" / "default" / f"{chat_id}.jsonl").read_bytes()
    assert lines.count(b'{"type":"turn"') == 6
    api.call("POST", f"/v1/chats/{chat_id}/messages", {"message": "And the offsite?"})
    parsed: list[int] = []
    from_dict = TurnRecord.from_dict
    monkeypatch.setattr(
        TurnRecord, "from_dict", classmethod(lambda _c, d: parsed.append(d["turn"]) or from_dict(d))
    )
    # Nor is the JSON of their lines read: a line holds the whole record (research traces
    # too), and its json.loads costs more than the record's from_dict.
    decoded: list[bytes] = []
    monkeypatch.setattr(
        journal,
        "json",
        SimpleNamespace(
            loads=lambda line: decoded.append(line) or json.loads(line), dumps=json.dumps
        ),
    )
    body = api.call("GET", f"/v1/turns?chat={chat_id}&limit=2")[1]
    assert [(t["n"], t["committed"]) for t in body["turns"]] == [(1, True), (2, True)]
    assert body["total"] == 7 and body["next_offset"] == 2
    assert parsed == [7]
    assert sum(line.startswith(b'{"type":"turn"') for line in decoded) == 1
    last = api.call("GET", f"/v1/turns?chat={chat_id}&offset=6")[1]["turns"]
    assert [(t["n"], t["committed"], t["question"]) for t in last] == [
        (7, False, "And the offsite?")
    ]


def test_history_reads_on_from_a_cursor_while_commits_arrive(served: MemoryServer) -> None:
    """Newest first, a window at a time, each read on from the last one's next_before: a
    commit made meanwhile comes at the top and shifts nothing (an offset would repeat one)."""
    api = client(served)
    everything = [c["commit"] for c in api.call("GET", "/v1/history?limit=1000")[1]["commits"]]
    seen, before = [], None
    while True:
        query = "limit=4" + (f"&before={before}" if before else "")
        body = api.call("GET", f"/v1/history?{query}")[1]
        seen += [c["commit"] for c in body["commits"]]
        assert (body["next_before"] is None) is (not body["more"])
        before = body["next_before"]
        if before is None:
            break
        if len(seen) == 4:
            commit_turn(served.kb, "meanwhile", 1)  # a new commit at the top
    assert seen == everything
    # One page's history reads on the same way (the roster, edited twice more by hand).
    path = f"tenants/default/{ROSTER}"
    for n in (1, 2):
        text = (served.kb.root / path).read_text() + f"\nEdit {n}.\n"
        served.kb.commit_files({path: text.encode()}, f"Edit the roster ({n})")
    page = [c["commit"] for c in api.call("GET", f"/v1/history?page={ROSTER}")[1]["commits"]]
    assert len(page) == 3
    first = api.call("GET", f"/v1/history?page={ROSTER}&limit=1")[1]
    rest = api.call("GET", f"/v1/history?page={ROSTER}&limit=1000&before={first['next_before']}")[1]
    assert [c["commit"] for c in first["commits"] + rest["commits"]] == page
    # A cursor that is not a commit of that history is named.
    # A whole id of no commit was a 500: git's rev-list refused the object (found by the fuzz
    # run), where an abbreviated one was already a 404.
    absent = "0" * 40
    for bad, status in (
        ("HEAD~1", 400),
        ("zzzz", 400),
        ("abcdef0123", 404),
        (everything[0], 400),
        (absent, 404),
    ):
        path = (
            f"/v1/history?page={ROSTER}&before={bad}"
            if bad == everything[0]
            else (f"/v1/history?before={bad}")
        )
        code, body, _ = api.call("GET", path)
        assert code == status and body["error"]["field"] in ("before", None), (bad, body)
    code, body, _ = api.call("GET", f"/v1/history?page={ROSTER}&before={absent}")
    assert code == 404, body


def test_history_gives_each_commits_full_id_and_whole_message(served: MemoryServer) -> None:
    """As ``kbmem log --json`` does: an auditor needs the full id (to name the version
    anywhere) and the whole message (its body, its trailers), not only the subject."""
    path = f"tenants/default/{ROSTER}"
    text = (served.kb.root / path).read_text() + "\nA late edit.\n"
    message = "Edit the roster\n\nWhy: the pilot moved.\n\nKbmem-Session: hand"
    sha = served.kb.commit_files({path: text.encode()}, message)
    whole = git(served.kb.root, "log", "-1", "--format=%B", sha).strip()
    assert whole.startswith("Edit the roster\n\nWhy: the pilot moved.") and "Kbmem-Session" in whole
    api = client(served)
    for query in ("limit=1", f"page={ROSTER}&limit=1"):
        (newest,) = api.call("GET", f"/v1/history?{query}")[1]["commits"]
        assert (newest["commit"], newest["subject"]) == (sha, "Edit the roster"), query
        assert newest["message"] == whole, query


def test_a_page_broken_by_hand_is_read_raw_to_repair_it(served: MemoryServer) -> None:
    """A page whose header was broken by hand is a 422 naming the problem (the stored page is
    at fault, not the request); ``raw=1`` gives it as stored, with the problem, for a client
    that must see it to repair it, as ``kbmem show`` prints it."""
    stored = "---\ntitle: [unclosed\n---\nThe body, as written.\n"
    path = "tenants/default/notes/broken.md"
    commit = served.kb.commit_files({path: stored.encode()}, "Break a header by hand")
    api = client(served)
    status, body, _ = api.call("GET", "/v1/pages/notes/broken.md")
    assert status == 422 and body["error"]["code"] == "unreadable_page"
    assert body["error"]["hint"] == (
        "GET /v1/pages/notes/broken.md?raw=1 gives the page as stored, to repair it"
    )
    problem = body["error"]["message"]
    assert "YAML" in problem or "header" in problem, problem
    for flag in ("1", "true"):
        status, page, _ = api.call("GET", f"/v1/pages/notes/broken.md?raw={flag}")
        assert status == 200 and page == {
            "id": "notes/broken.md",
            "path": path,
            "commit": commit,
            "header": None,
            "text": stored,
            "problem": problem,
        }
    # A page that reads comes as always, raw or not: its header, and no problem.
    status, roster, _ = api.call("GET", f"/v1/pages/{ROSTER}?raw=1")
    assert status == 200 and roster["problem"] is None and roster["header"]["title"]
    assert roster == api.call("GET", f"/v1/pages/{ROSTER}")[1]
    assert api.call("GET", "/v1/pages/notes/broken.md?raw=0")[0] == 422
    status, body, _ = api.call("GET", "/v1/pages/notes/broken.md?raw=yes")
    assert status == 400 and body["error"]["field"] == "raw"


def commits_of(body: dict[str, Any]) -> list[str]:
    return [c["commit"] for c in body["commits"]]


def read_history(api: Client, query: str, limit: int) -> list[dict[str, Any]]:
    """Every commit of a history, read ``limit`` at a time from each window's next_before."""
    seen: list[dict[str, Any]] = []
    before = None
    while True:
        cursor = f"&before={before}" if before else ""
        body = api.call("GET", f"/v1/history?{query}&limit={limit}{cursor}")[1]
        seen += body["commits"]
        assert (body["next_before"] is None) is (not body["more"]), body
        before = body["next_before"]
        if before is None:
            return seen


def test_a_pages_history_reads_from_git_only_the_window_it_answers(
    served: MemoryServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page of many versions: a window costs its own commits, not the page's whole log
    (with 2,000 versions, reading them all took 0.1 s a window, however small)."""
    path = f"tenants/default/{ROSTER}"
    text = (served.kb.root / path).read_bytes()
    for n in range(60):
        text += f"Edit {n}.\n".encode()
        served.kb.commit_files({path: text}, f"Edit the roster ({n})")
    api = client(served)
    everything = commits_of(api.call("GET", f"/v1/history?page={ROSTER}&limit=1000")[1])
    assert len(everything) == 61
    read: list[str] = []

    def counted(sha: str, *rest: Any) -> CommitInfo:
        read.append(sha)
        return CommitInfo(sha, *rest)

    monkeypatch.setattr(store, "CommitInfo", counted)
    first = api.call("GET", f"/v1/history?page={ROSTER}&limit=5")[1]
    assert commits_of(first) == everything[:5] and first["more"] is True
    assert len(read) <= 6, len(read)  # the window, and one more to tell whether there are more
    read.clear()
    second = api.call("GET", f"/v1/history?page={ROSTER}&limit=5&before={first['next_before']}")
    assert commits_of(second[1]) == everything[5:10] and second[1]["more"] is True
    assert len(read) <= 7, len(read)  # the cursor as well
    read.clear()
    last = api.call("GET", f"/v1/history?page={ROSTER}&limit=5&before={everything[-3]}")[1]
    assert commits_of(last) == everything[-2:] and last["next_before"] is None
    assert len(read) <= 3, len(read)


def test_a_pages_history_reads_on_across_a_rename(served: MemoryServer) -> None:
    """A note renamed by hand keeps its history (git log --follow), and a cursor from before
    the rename reads on from there, under the note's old name."""
    old, new = "tenants/default/notes/crew.md", "tenants/default/notes/crew-list.md"
    text = "---\ntitle: Crew\n---\n" + "".join(f"Berth {n} has a crew of {n}.\n" for n in range(20))
    for n in range(5):
        if n == 3:
            git(served.kb.root, "mv", old, new)
            git(served.kb.root, "commit", "-q", "-m", "Rename the crew note")
        text += f"Edit {n}.\n"
        served.kb.commit_files({new if n >= 3 else old: text.encode()}, f"Crew edit {n}")
    api = client(served)
    everything = api.call("GET", "/v1/history?page=notes/crew-list.md")[1]["commits"]
    assert [c["path"] for c in everything] == [new] * 3 + [old] * 3
    assert everything[2]["subject"] == "Rename the crew note"
    for limit in (1, 2, 4):
        assert read_history(api, "page=notes/crew-list.md", limit) == everything, limit
    # The old name's history ends at the rename: a cursor after it is none of its commits.
    newest = everything[0]["commit"]
    status, body, _ = api.call("GET", f"/v1/history?page=notes/crew.md&before={newest}")
    assert status == 400 and body["error"]["field"] == "before", body


def test_a_note_named_like_a_pattern_has_only_its_own_history(served: MemoryServer) -> None:
    """'[ab].md' and '*.md' are file names to git here, not patterns that match other notes."""
    kb, api = served.kb, client(served)
    for n, name in enumerate(("a.md", "[ab].md", "*.md", "a.md")):
        note = f"---\ntitle: {name}\n---\nVersion {n}.\n"
        kb.commit_files({f"tenants/default/notes/{name}": note.encode()}, f"Write {name}")
    for name in ("[ab].md", "*.md"):
        body = api.call("GET", f"/v1/history?page={quote('notes/' + name)}")[1]
        assert [c["subject"] for c in body["commits"]] == [f"Write {name}"], body


BAD_LIMITS = {
    "neg": ("limit=-1", "limit", "between 1 and 1000"),
    "zero": ("limit=0", "limit", "between 1 and 1000"),
    "big": ("limit=1001", "limit", "between 1 and 1000"),
    "float": ("limit=5.0", "limit", "whole number, got '5.0'"),
    "text": ("limit=x", "limit", "whole number"),
    "empty": ("limit=", "limit", "whole number"),
    "twice": ("limit=1&limit=2", "limit", "more than once"),
    "huge": ("limit=" + "9" * 5000, "limit", "too many digits"),
}
BAD_OFFSETS = {
    "off-neg": ("offset=-1", "offset", "between 0 and 10000000"),
    "off-big": ("offset=10000001", "offset", "between 0 and 10000000"),
    "off-float": ("offset=5.0", "offset", "whole number"),
    "typo": ("limt=5", "limt", "not a parameter here"),
}


@pytest.mark.parametrize(
    ("route", "query", "field", "words"),
    [
        pytest.param(route, *case, id=f"{route[4:]}-{name}")
        for route in ("/v1/pages", "/v1/turns", "/v1/history")
        for name, case in (BAD_LIMITS | BAD_OFFSETS).items()
        if not (route == "/v1/history" and name == "off-float")
    ],
)
def test_a_bad_window_is_a_400_naming_it(
    served: MemoryServer, route: str, query: str, field: str, words: str
) -> None:
    if route == "/v1/history" and field == "offset":
        # History lists the newest commits, as MCP's page_history: it takes no offset, and
        # says so rather than answering the same window to a client that pages on.
        words = "not a parameter here (expected: page, limit, before)"
    status, body, _ = client(served).call("GET", f"{route}?{query}")
    assert status == 400 and body["error"]["field"] == field, body
    assert words in body["error"]["message"], body


def test_every_get_answers_head_and_every_route_options(served: MemoryServer) -> None:
    api, anonymous = client(served), Client(served, None)
    for path in ("/v1/health", "/v1/pages?limit=3", f"/v1/pages/{ROSTER}", "/v1/history"):
        got, body, response = api.call("GET", path)
        status, empty, head = api.call("HEAD", path)
        assert (status, empty) == (got, b""), path
        for header in ("Content-Type", "Content-Length", "Cache-Control"):
            assert head.headers[header] == response.headers[header], (path, header)
    # A probe needs no token for health; anything else still does.
    assert anonymous.call("HEAD", "/v1/health")[:2] == (200, b"")
    status, empty, head = anonymous.call("HEAD", "/v1/pages")
    assert (status, empty, head.headers["WWW-Authenticate"]) == (401, b"", "Bearer")
    status, empty, head = api.call("HEAD", "/v1/search")
    assert (status, empty, head.headers["Allow"]) == (405, b"", "OPTIONS, POST")
    # A body-less answer leaves the connection fit for the next request.
    conn = http.client.HTTPConnection(*served.server_address[:2], timeout=30)
    answers = []
    for method in ("HEAD", "OPTIONS", "GET"):
        conn.request(method, "/v1/health")
        response = conn.getresponse()
        answers.append((response.status, response.read()))
    conn.close()
    assert [status for status, _ in answers] == [200, 204, 200]
    assert answers[1][1] == b"" and json.loads(answers[2][1])["status"] == "ok"
    for path, allow in (
        ("/v1/health", "GET, HEAD, OPTIONS"),
        ("/v1/pages", "GET, HEAD, OPTIONS"),
        (f"/v1/pages/{ROSTER}", "GET, HEAD, OPTIONS"),
        ("/v1/search", "OPTIONS, POST"),
        ("/v1/chats", "OPTIONS, POST"),
        ("/v1/chats/c1", "DELETE, OPTIONS"),
        ("/v1/chats/c1/messages", "OPTIONS, POST"),
        ("/v1/turns/c1/1", "GET, HEAD, OPTIONS"),
        ("*", "DELETE, GET, HEAD, OPTIONS, POST"),
    ):
        status, empty, response = anonymous.call("OPTIONS", path)
        assert (status, empty, response.headers["Allow"]) == (204, b"", allow), path
        assert not any(h.lower().startswith("access-control-") for h in response.headers)
    # The methods a route takes are the same wherever they are named.
    assert api.call("DELETE", "/v1/chats")[2].headers["Allow"] == "OPTIONS, POST"
    status, body, _ = anonymous.call("OPTIONS", "/v1/nothing")
    assert status == 404 and body["error"]["code"] == "not_found"


def test_research_returns_a_cited_briefing_and_streams_its_trace(served: MemoryServer) -> None:
    api = client(served)
    request = {"request": "Who is Femi Adeyemi's onboarding buddy?", "trace": True}
    status, briefing, _ = api.call("POST", "/v1/research", request)
    assert status == 200 and briefing["tenantId"] == "default"
    assert any("Tobias Ferrante" in e["excerpt"] for e in briefing["evidence"])
    assert ROSTER in briefing["pagesUsed"]
    assert [e["kind"] for e in briefing["trace"]][:2] == ["plan", "tool_call"]

    status, stream, response = api.call(
        "POST",
        "/v1/research",
        {"request": "Who is Femi Adeyemi's onboarding buddy?", "stream": True},
    )
    assert status == 200 and response.headers.get_content_type() == "text/event-stream"
    events = re.findall(r"event: (\w+)\ndata: (.*)\n\n", stream.decode())
    kinds = [k for k, _ in events]
    assert kinds[-1] == "briefing" and kinds.count("trace") >= 3
    assert json.loads(events[-1][1])["evidence"] == briefing["evidence"]
    # Each event has an id, its sequence number, so a client can tell a gap.
    ids = re.findall(r"(?m)^id: (\d+)\nevent: ", stream.decode())
    assert [int(i) for i in ids] == list(range(1, len(events) + 1))


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        (b'{"request": ', "body", "invalid JSON at line 1"),
        (b"[1, 2]", "body", "JSON object"),
        (b'{"requst": "x"}', "body", "unknown field(s) 'requst'"),
        (b'{"request": ""}', "request", "non-empty"),
        (b'{"request": "x", "max_pages": 99}', "max_pages", "between 1 and 32"),
        (b'{"request": "x", "depth": "2"}', "depth", "whole number"),
        (b'{"request": "x", "engine": "gpt"}', "engine", "offline, llm"),
        (b'{"request": "x", "engine": "llm"}', "engine", "no model"),
        (b'{"request": "x", "trace": "yes"}', "trace", "true or false"),
        (b'{"request": "x", "time_budget_s": "soon"}', "time_budget_s", "number of seconds"),
        (b'{"request": "x", "time_budget_s": 1e9}', "time_budget_s", "at most"),
        (b"\xff\xfe", "body", "UTF-8"),
    ],
)
def test_bad_research_requests_are_named(
    served: MemoryServer, body: bytes, field: str, words: str
) -> None:
    status, answer, _ = client(served).call("POST", "/v1/research", raw=body)
    assert status == 400, answer
    assert answer["error"]["field"] == field and words in answer["error"]["message"]


@pytest.mark.parametrize(
    ("k", "words"),
    [(2.5, "whole number"), (True, "whole number"), ("3", "whole number"), (1e300, "between")],
    ids=["half", "bool", "text", "huge"],
)
def test_a_number_that_is_not_whole_is_refused(served: MemoryServer, k: Any, words: str) -> None:
    status, body, _ = client(served).call("POST", "/v1/search", {"query": "pilot", "k": k})
    assert status == 400 and body["error"]["field"] == "k" and words in body["error"]["message"]


def test_a_whole_number_written_with_a_point_is_whole(served: MemoryServer) -> None:
    # JSON has one kind of number, and JSON Schema's "integer" takes 3.0: as MCP does.
    api, query = client(served), {"query": "onboarding buddy", "tool": "bm25"}
    status, found, _ = api.call("POST", "/v1/search", {**query, "k": 3.0})
    assert status == 200 and found == api.call("POST", "/v1/search", {**query, "k": 3})[1]
    assert len(found["hits"]) == 3
    request = {"request": "Who is Femi Adeyemi's onboarding buddy?", "max_pages": 2.0}
    status, briefing, _ = api.call("POST", "/v1/research", {**request, "depth": 0.0})
    assert status == 200 and 0 < len(briefing["pagesUsed"]) <= 2


def test_search_hits_are_camel_case_throughout_as_briefings_are(served: MemoryServer) -> None:
    """A hit named its page pageId and its interval's page_id, in one object; its interval
    is now a briefing's evidence interval (turnIds), with the kind of interval as well."""
    api = client(served)
    found = api.call("POST", "/v1/search", {"query": "onboarding buddy offsite", "k": 8})[1]
    hits = found["hits"]
    assert hits and all(CAMEL_CASE.fullmatch(key) for key in keys_of(found)), keys_of(found)
    assert any(h["interval"]["turnIds"] for h in hits)
    assert all(h["interval"]["kind"] in ("turn", "paragraph", "section", "line") for h in hits)
    request = {"request": "Who is Femi Adeyemi's onboarding buddy?"}
    evidence = api.call("POST", "/v1/research", request)[1]["evidence"]
    assert all(set(evidence[0]["interval"]) <= set(h["interval"]) for h in hits)


def test_a_search_query_is_no_longer_than_a_research_request(served: MemoryServer) -> None:
    # A query of 100,000 words (1 MB) kept BM25 busy for 106 s, a server thread per request.
    words = " ".join(f"w{n}" for n in range(20_000))
    api = client(served)
    status, body, _ = api.call("POST", "/v1/search", {"query": words, "tool": "bm25"})
    assert status == 400 and body["error"]["field"] == "query", body
    assert "longer than 20000 characters" in body["error"]["message"]
    status, body, _ = api.call("POST", "/v1/search", {"query": words[:20_000], "tool": "bm25"})
    assert status == 200 and body["hits"] == []


def test_routes_methods_and_sizes(served: MemoryServer) -> None:
    api = client(served)
    status, body, _ = api.call("GET", "/v1/nothing")
    assert status == 404 and body["error"]["code"] == "not_found"
    status, body, response = api.call("PUT", "/v1/pages")
    assert status == 405 and response.headers["Allow"] == "GET, HEAD, OPTIONS"
    status, body, _ = api.call("POST", "/v1/search")
    assert status == 400 and body["error"]["message"] == "is empty; send a JSON object"
    conn = http.client.HTTPConnection(*served.server_address[:2], timeout=30)
    conn.putrequest("POST", "/v1/search")
    conn.putheader("Authorization", f"Bearer {api.token}")
    conn.endheaders()
    response = conn.getresponse()
    assert (
        response.status == 411
        and "Content-Length" in json.loads(response.read())["error"]["message"]
    )
    conn.close()
    # Refused from its Content-Length alone: the body is never read, the connection closed.
    conn = http.client.HTTPConnection(*served.server_address[:2], timeout=30)
    conn.putrequest("POST", "/v1/sessions")
    conn.putheader("Authorization", f"Bearer {api.token}")
    conn.putheader("Content-Length", str(served.max_body + 1))
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 413 and response.headers["Connection"] == "close"
    assert "at most" in json.loads(response.read())["error"]["message"]
    conn.close()


def test_a_malformed_session_leaves_memory_as_it_was(served: MemoryServer) -> None:
    api, head = client(served), served.kb.head()
    for bad, field in (
        ({"title": "x", "turns": "hello"}, "turns"),
        ({"title": "x", "turns": []}, "turns"),
        ({"title": "x", "turns": [{"role": "user"}]}, "turns[0].content"),
        ({"sessionId": "../escape", "turns": [{"role": "u", "content": "c"}]}, "sessionId"),
        # A misspelt turn field would lose its value: refused like a misspelt session field.
        (
            {"turns": [{"role": "u", "content": "c", "timestmap": "2026-04-01T10:00:00"}]},
            "turns[0].timestmap",
        ),
    ):
        status, body, _ = api.call("POST", "/v1/sessions", bad)
        assert status == 400 and body["error"]["field"] == field, body
    assert served.kb.head() == head
    status, created, _ = api.call(
        "POST", "/v1/sessions", summit_session(None, ["Hull is teal."], None, "Boat paint")
    )
    assert status == 201 and served.kb.head() == created["commit"]
    status, again, _ = api.call(
        "POST", "/v1/sessions", summit_session(None, ["Hull is teal."], None, "Boat paint")
    )
    assert status == 200 and again["status"] == "unchanged"


def test_a_chat_is_answered_committed_and_audited(served: MemoryServer) -> None:
    api = client(served)
    crew = new_chat(api)
    status, reply, _ = api.call(
        "POST", f"/v1/chats/{crew}/messages", {"message": "Who is the first pilot customer?"}
    )
    assert status == 200 and reply["turn_id"] == f"{crew}/1" and reply["status"] == "complete"
    assert "Skerrick Island Ferries" in reply["answer"] and reply["citations"]
    status, closed, _ = api.call("DELETE", f"/v1/chats/{crew}")
    assert status == 200 and closed["commit"] == served.kb.head()
    assert "Kbmem-Tenant: default" in git(served.kb.root, "log", "-1", "--format=%B")
    turns = api.call("GET", f"/v1/turns?chat={crew}")[1]["turns"]
    assert [(t["turn"], t["committed"]) for t in turns] == [(f"{crew}/1", True)]
    status, audit, _ = api.call("GET", f"/v1/turns/{crew}/1")
    assert status == 200 and audit["question"] == "Who is the first pilot customer?"
    assert audit["tool_calls"] and audit["tool_calls"][0]["name"] == "research"
    # Another tenant cannot read this turn, nor continue the chat; bad ids are named.
    status, body, _ = client(served, "other").call("GET", f"/v1/turns/{crew}/1")
    assert status == 404, body
    status, body, _ = client(served, "other").call("POST", "/v1/chats", {"chat_id": crew})
    assert status == 404, body
    status, body, _ = api.call("POST", "/v1/chats/..%2Fx/messages", {"message": "hi"})
    assert status == 400 and body["error"]["field"] == "chat_id"
    status, body, _ = api.call("DELETE", f"/v1/chats/{crew}")
    assert status == 404 and "not open" in body["error"]["message"]
    # Closed, it goes on from its committed turns.
    status, reply, _ = api.call("POST", f"/v1/chats/{crew}/messages", {"message": "And sync?"})
    assert status == 200 and reply["turn_id"] == f"{crew}/2", reply


def test_a_chat_id_the_tenant_has_no_chat_of_is_a_404_naming_it(served: MemoryServer) -> None:
    """A client names a chat to continue it: an id it made up or misspelt starts no chat
    (nor joins one another client made up too). Without an id a new chat starts."""
    api, head = client(served), served.kb.head()
    for path, body in (
        ("/v1/chats/invented/messages", {"message": "Who owns sync?"}),
        ("/v1/chats", {"chat_id": "invented"}),
    ):
        status, answer, response = api.call("POST", path, body)
        assert status == 404 and response.headers.get_content_type() == "application/json"
        assert answer["error"]["code"] == "not_found", answer
        assert "tenant 'default' has no chat 'invented'" in answer["error"]["message"], answer
    assert not list((served.kb.state_dir / "journal").rglob("invented*"))
    assert api.call("GET", "/v1/turns?chat=invented")[0] == 404
    assert served.kb.head() == head
    # A new chat, and one open in another process, are known by their ids.
    chat_id = new_chat(api)
    # (issue 33: snake_case names answer with their camelCase twins for one release)
    assert api.call("POST", "/v1/chats", {"chat_id": chat_id})[:2] == (
        200,
        {"chat_id": chat_id, "chatId": chat_id},
    )
    from kbmem.agent.session import ChatSession

    with ChatSession(KnowledgeBase(served.kb.root), "default") as elsewhere:
        path = f"/v1/chats/{elsewhere.chat_id}/messages"
        status, body, _ = api.call("POST", path, {"message": "Who owns sync?"})
    assert status == 409 and "another process" in body["error"]["message"], body


def test_a_damaged_turn_is_a_422_and_an_unknown_chat_a_404(served: MemoryServer) -> None:
    api = client(served)
    folder = commit_turn(served.kb, "hand", 1)
    commit_edit(served.kb.root, folder + "tool_calls.jsonl", lambda old: old + b'{"broken": ')
    # The stored turn is at fault, not the request; the error names the file and the line.
    status, body, _ = api.call("GET", "/v1/turns/hand/1")
    assert status == 422 and body["error"]["field"] == folder + "tool_calls.jsonl"
    assert body["error"]["code"] == "unreadable_turn"
    assert body["error"]["message"] == "line 2: malformed JSON (Expecting value at column 12)"
    status, body, _ = api.call("GET", "/v1/turns?chat=hand")
    assert status == 200 and [(t["turn"], t["status"]) for t in body["turns"]] == [
        ("hand/1", "damaged")
    ]
    assert "line 2: malformed JSON" in body["turns"][0]["problem"]
    status, body, _ = api.call("GET", "/v1/turns?chat=nope")
    assert status == 404 and body["error"]["message"] == "tenant 'default' has no chat 'nope'"
    # A chat that is open but has no turn yet is no error.
    fresh = new_chat(api)
    assert api.call("GET", f"/v1/turns?chat={fresh}")[:2] == (
        200,
        {"tenant": "default", "turns": [], "total": 0, "next_offset": None, "nextOffset": None},
    )


def test_a_chat_closed_before_its_first_turn_leaves_nothing(served: MemoryServer) -> None:
    """A chat closed before its first turn is gone: no file of it is left under
    ``.kbmem/chats/``, and it is then as unknown as an invented one. A chat with turns stays
    known through git."""
    api = client(served)
    empty = new_chat(api)
    assert api.call("DELETE", f"/v1/chats/{empty}")[:2] == (
        200,
        {"chat_id": empty, "chatId": empty, "commit": None, "closed": True},
    )
    assert not [p for p in (served.kb.state_dir / "chats").rglob(empty) if p.is_file()]
    status, body, _ = api.call("DELETE", f"/v1/chats/{empty}")
    assert status == 404 and body["error"]["message"] == f"tenant 'default' has no chat {empty!r}"
    used = new_chat(api)
    reply = api.call("POST", f"/v1/chats/{used}/messages", {"message": "Who owns sync?"})[1]
    assert reply["turn_id"] == f"{used}/1", reply
    assert api.call("DELETE", f"/v1/chats/{used}")[1]["commit"] == served.kb.head()
    # From now on git knows the chat by its turn.
    assert not list((served.kb.state_dir / "chats").rglob(used))
    assert api.call("GET", f"/v1/turns?chat={used}")[1]["total"] == 1


def test_a_chat_opens_with_no_body_at_all(served: MemoryServer) -> None:
    # What `curl -X POST` and `requests.post(url)` send: no body, or an empty one.
    api = client(served)
    conn = http.client.HTTPConnection(*served.server_address[:2], timeout=30)
    conn.putrequest("POST", "/v1/chats")
    conn.putheader("Authorization", f"Bearer {api.token}")
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 201 and json.loads(response.read())["chat_id"]
    conn.close()
    status, opened, _ = api.call("POST", "/v1/chats", raw=b"")
    assert status == 201 and opened["chat_id"]
    status, body, _ = api.call("POST", "/v1/chats", raw=b" ")
    assert status == 400 and body["error"]["field"] == "body"


def test_messages_sent_to_one_chat_at_once_are_answered_in_turn(served: MemoryServer) -> None:
    api = client(served)
    busy = new_chat(api)
    replies: list[dict[str, Any]] = []

    def ask(question: str) -> None:
        status, reply, _ = api.call("POST", f"/v1/chats/{busy}/messages", {"message": question})
        assert status == 200, reply
        replies.append(reply)

    threads = [
        threading.Thread(target=ask, args=(q,))
        for q in ("Who is the pilot customer?", "Who owns the sync service?")
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(r["turn"] for r in replies) == [1, 2]
    assert all(r["status"] == "complete" for r in replies)


def test_stopping_the_server_commits_open_chats(example_kb: KnowledgeBase) -> None:
    server = MemoryServer(("127.0.0.1", 0), example_kb)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    api = client(server)
    head = example_kb.head()
    late = new_chat(api)
    status, _, _ = api.call("POST", f"/v1/chats/{late}/messages", {"message": "When is launch?"})
    assert status == 200 and example_kb.head() == head  # batched: not yet committed
    server.shutdown()
    server.server_close()
    assert example_kb.head() != head
    assert f"chat {late}" in git(example_kb.root, "log", "-1", "--format=%s")


def test_idle_chats_are_closed_and_committed(example_kb: KnowledgeBase) -> None:
    server = MemoryServer(("127.0.0.1", 0), example_kb, chat_idle_seconds=0.5)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        api = client(server)
        head = example_kb.head()
        api.call("POST", f"/v1/chats/{new_chat(api)}/messages", {"message": "Who owns sync?"})
        memory = server.memory("default")
        for _ in range(40):
            if example_kb.head() != head:
                break
            threading.Event().wait(0.25)
        assert example_kb.head() != head and memory.close_idle_chats(0) == []
    finally:
        server.shutdown()
        server.server_close()


def test_tokens_are_kept_hashed_and_a_revoked_one_stops_at_once(
    served: MemoryServer, tmp_path: Path
) -> None:
    kb = served.kb
    created = kbmem("--kb", str(kb.root), "token", "create", "--json")
    info = json.loads(created.stdout)
    tokens_file = kb.state_dir / "api-tokens.json"
    assert info["token"] not in tokens_file.read_text()
    assert stat.S_IMODE(tokens_file.stat().st_mode) == 0o600
    api = Client(served, info["token"])
    assert api.call("GET", "/v1/pages")[0] == 200
    # Another tenant cannot revoke it, nor learn that it exists.
    other = kbmem("--kb", str(kb.root), "--tenant", "other", "token", "revoke", info["id"])
    assert other.returncode == 3 and "has no API token" in other.stderr
    assert kbmem("--kb", str(kb.root), "token", "revoke", info["id"]).returncode == 0
    assert api.call("GET", "/v1/pages")[0] == 401


@pytest.mark.parametrize(
    ("tenant", "exists"), [("default", True), ("defualt", False)], ids=["known", "typo"]
)
def test_a_token_for_a_tenant_with_no_pages_is_made_with_a_warning(
    example_kb: KnowledgeBase, capsys: pytest.CaptureFixture[str], tenant: str, exists: bool
) -> None:
    """A new tenant may start with a token (its agent ingests first), so the token is made;
    but a misspelt --tenant gives one too, so the command says the tenant holds nothing."""
    root = str(example_kb.root)
    code = main(["--kb", root, "--tenant", tenant, "token", "create", "--name", "agent"])
    out, err = capsys.readouterr()
    assert code == 0 and out.startswith("kbm_")
    assert TokenStore(example_kb.state_dir).tenant_of(out.strip()) == tenant
    warning = f"kbmem: warning: tenant {tenant!r} holds no pages yet"
    assert (warning in err) is not exists, err
    if not exists:
        assert "(existing tenants: default)" in err
    code = main(["--kb", root, "--tenant", tenant, "token", "create", "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["tenant_exists"] is exists
    assert (warning in err) is not exists


@pytest.mark.parametrize("tenant", ["../default", "a/b", "..", ".hidden"])
def test_a_token_for_a_path_like_tenant_is_refused(
    example_kb: KnowledgeBase, capsys: pytest.CaptureFixture[str], tenant: str
) -> None:
    code = main(["--kb", str(example_kb.root), "--tenant", tenant, "token", "create"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "tenantId" in err and "not a safe id" in err
    assert not (example_kb.state_dir / "api-tokens.json").exists()


def test_a_damaged_token_file_fails_closed_and_is_never_overwritten(
    served: MemoryServer, caplog: pytest.LogCaptureFixture
) -> None:
    api = client(served)
    tokens_file = served.kb.state_dir / "api-tokens.json"
    tokens_file.write_text("{not json")
    status, body, _ = api.call("GET", "/v1/pages")
    # Refused, and the client is not told where the server keeps its files; the log is.
    assert status == 500 and str(served.kb.root) not in json.dumps(body)
    assert "api-tokens.json: not a readable token file" in caplog.text
    made = kbmem("--kb", str(served.kb.root), "token", "create")
    assert made.returncode != 0 and "api-tokens.json" in made.stderr
    assert tokens_file.read_text() == "{not json"
    entry = {"id": "x", "tenant": "../default", "name": "", "created_at": "", "sha256": None}
    tokens_file.write_text(json.dumps({"version": 1, "tokens": [entry]}))
    assert api.call("GET", "/v1/pages")[0] == 500


def chat_with(port: int, token: str, message: str) -> tuple[str, int, Any]:
    """A new chat on a server in another process, and its answer to ``message``: the chat's
    id, the status and the body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Authorization": f"Bearer {token}"}
    conn.request("POST", "/v1/chats", headers=headers)
    response = conn.getresponse()
    assert response.status == 201
    chat_id = json.loads(response.read())["chat_id"]
    body = json.dumps({"message": message})
    conn.request("POST", f"/v1/chats/{chat_id}/messages", body=body, headers=headers)
    response = conn.getresponse()
    answer = json.loads(response.read())
    conn.close()
    return chat_id, response.status, answer


def test_kbmem_serve_runs_until_sigterm_and_commits_on_the_way_out(
    example_kb: KnowledgeBase,
) -> None:
    token, _ = TokenStore(example_kb.state_dir).create("default", "cli")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbmem.cli", "--kb", str(example_kb.root), "serve", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"at http://127\.0\.0\.1:(\d+)", line)
        assert match, line
        port = int(match.group(1))
        chat_id, status, reply = chat_with(port, token, "Who is the pilot customer?")
        assert status == 200 and reply["turn"] == 1
        head = example_kb.head()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        said = line + proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert example_kb.head() != head
    assert "kbmem: event loop uvloop" in said, said
    assert f"chat {chat_id}" in git(example_kb.root, "log", "-1", "--format=%s")


@pytest.mark.parametrize(
    "at",
    [
        ":/Team roster",  # searches every tenant's commit messages
        "HEAD^{/Team roster}",
        "HEAD:tenants/default/notes/team-roster.md",  # names any file
        "HEAD@{1}",
        "main",
        "--output=/tmp/x",
    ],
)
def test_revisions_that_search_or_name_files_are_refused(served: MemoryServer, at: str) -> None:
    api = client(served, "other")
    status, body, _ = api.call("GET", f"/v1/pages?at={quote(at)}")
    assert status == 400 and body["error"]["field"] == "at", body


def test_revisions_that_do_not_exist_are_not_found(served: MemoryServer) -> None:
    api = client(served)
    for at in ("deadbeef", "HEAD~999"):
        status, body, _ = api.call("GET", f"/v1/pages/{ROSTER}?at={at}")
        assert status == 404, (at, body)


@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        ("/v1/search", b'{"query": "x", "k": ' + b"9" * 5000 + b"}", "body"),
        ("/v1/search", b"[" * 100_000 + b"]" * 100_000, "body"),
        ("/v1/search", b'{"query": "bad \\ud800"}', "query"),
        (
            "/v1/sessions",
            b'{"title": "t", "turns": [{"role": "u", "content": "\\udc00"}]}',
            "turns[0].content",
        ),
        ("/v1/chats/c/messages", b'{"message": "\\ud800"}', "message"),
        ("/v1/sessions", b'{"sesionId": "typo", "turns": [{"role": "u", "content": "c"}]}', "body"),
        ("/v1/research", b'{"request": "x", "engine": ""}', "engine"),
    ],
    ids=[
        "huge-int",
        "deep",
        "surrogate-query",
        "surrogate-session",
        "surrogate-chat",
        "typo",
        "engine",
    ],
)
def test_input_python_or_git_cannot_hold_is_a_400(
    served: MemoryServer, route: str, body: bytes, field: str | None
) -> None:
    head = served.kb.head()
    status, answer, _ = client(served).call("POST", route, raw=body)
    assert status == 400, answer
    if field:
        assert answer["error"]["field"] == field, answer
    assert served.kb.head() == head and not git(served.kb.root, "status", "--porcelain")


def test_a_streamed_research_refuses_bad_arguments_before_it_streams(
    served: MemoryServer,
) -> None:
    api = client(served)
    for body in (
        {"request": "x", "stream": True, "max_pages": 999},
        {"request": "x", "stream": True, "engine": "llm"},
        {"request": "x" * 20_001, "stream": True},
    ):
        status, _, response = api.call("POST", "/v1/research", body)
        assert status == 400 and response.headers.get_content_type() == "application/json"


def test_statuses_say_whose_fault_it_is(served: MemoryServer) -> None:
    api = client(served)
    twice = new_chat(api)
    assert api.call("POST", "/v1/chats", {"chat_id": twice})[0] == 200  # open already
    # A chat open in another process: a conflict, not bad input.
    from kbmem.agent.session import ChatSession

    with ChatSession(KnowledgeBase(served.kb.root), "default", chat_id="elsewhere"):
        status, body, _ = api.call("POST", "/v1/chats", {"chat_id": "elsewhere"})
    assert status == 409 and "another process" in body["error"]["message"]
    # A page whose header was broken by hand: the stored page is at fault, not the request.
    page = served.kb.root / "tenants" / "default" / "notes" / "broken.md"
    page.write_text("---\ntitle: [unclosed\n---\nbody\n")
    git(served.kb.root, "add", str(page))
    git(served.kb.root, "commit", "-q", "-m", "hand edit")
    status, body, _ = api.call("GET", "/v1/pages/notes/broken.md")
    assert status == 422 and body["error"]["code"] == "unreadable_page"


def test_http_level_refusals_are_json_too(served: MemoryServer) -> None:
    api = client(served)
    # Methods no route has: the server's own refusal (501), or a route's (405 with Allow).
    for method, status, code in (
        ("TRACE", 501, "http"),
        ("BREW", 501, "http"),
        ("PATCH", 405, "method_not_allowed"),
    ):
        answer, body, response = api.call(method, "/v1/pages")
        assert (answer, body["error"]["code"]) == (status, code), method
        assert response.headers.get_content_type() == "application/json"
    status, body, _ = api.call("GET", "/v1/pages/" + "x" * 70_000)
    assert status == 414 and body["error"]["code"] == "http"
    for lengths in (["+17"], ["17", "0"], ["1_7"]):
        conn = http.client.HTTPConnection(*served.server_address[:2], timeout=30)
        conn.putrequest("POST", "/v1/search")
        conn.putheader("Authorization", f"Bearer {api.token}")
        for value in lengths:
            conn.putheader("Content-Length", value)
        conn.endheaders(b'{"query": "pilot"}')
        response = conn.getresponse()
        assert response.status == 400, lengths
        assert "Content-Length" in json.loads(response.read())["error"]["message"]
        conn.close()


def test_expect_100_continue_is_answered_only_for_a_valid_token(served: MemoryServer) -> None:
    with socket.create_connection(served.server_address[:2], timeout=30) as sock:
        sock.sendall(
            b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000000\r\nExpect: 100-continue\r\n\r\n"
        )
        first = sock.recv(4096).decode()
    assert first.startswith("HTTP/1.1 401") and "100 Continue" not in first


def test_idle_and_excess_connections_cannot_exhaust_the_server(example_kb: KnowledgeBase) -> None:
    class Small(MemoryServer):
        max_connections = 2
        socket_timeout = 1.0

    server = Small(("127.0.0.1", 0), example_kb)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        api = client(server)
        stalled = [socket.create_connection(server.server_address[:2]) for _ in range(2)]
        for sock in stalled:  # a request line, and then nothing
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nX-a: ")
        threading.Event().wait(0.3)
        with socket.create_connection(server.server_address[:2], timeout=10) as third:
            third.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert third.recv(4096).startswith(b"HTTP/1.1 503")
        # The stalled ones are dropped after the socket timeout, and the slots come back.
        for sock in stalled:
            sock.settimeout(10)
            assert sock.recv(4096) == b""
            sock.close()
        assert api.call("GET", "/v1/pages")[0] == 200
    finally:
        server.shutdown()
        server.server_close()


def test_a_close_that_finds_the_knowledge_base_locked_keeps_the_chat(served: MemoryServer) -> None:
    served.kb.settings.data["git"]["lock_timeout_s"] = 0.5
    api = client(served)
    held = new_chat(api)
    assert api.call("POST", f"/v1/chats/{held}/messages", {"message": "Who owns sync?"})[0] == 200
    head = served.kb.head()
    with KnowledgeBase(served.kb.root).write_lock():
        status, body, _ = api.call("DELETE", f"/v1/chats/{held}")
    assert status == 409 and served.kb.head() == head
    # Still open: it takes messages, and a later close commits both turns.
    reply = api.call("POST", f"/v1/chats/{held}/messages", {"message": "And the pilot?"})[1]
    assert reply["turn"] == 2
    status, body, _ = api.call("DELETE", f"/v1/chats/{held}")
    assert status == 200 and body["commit"] == served.kb.head()
    assert "turns 1-2" in git(served.kb.root, "log", "-1", "--format=%s")


def test_turns_a_killed_server_left_are_committed_when_it_starts_again(
    example_kb: KnowledgeBase,
) -> None:
    token, _ = TokenStore(example_kb.state_dir).create("default", "cli")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbmem.cli", "--kb", str(example_kb.root), "serve", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stderr is not None
        port = int(re.search(r":(\d+) ", proc.stderr.readline()).group(1))  # type: ignore[union-attr]
        chat_id, status, _ = chat_with(port, token, "Who is the pilot customer?")
        assert status == 200
    finally:
        proc.kill()
        proc.wait()
    head = example_kb.head()
    server = MemoryServer(("127.0.0.1", 0), example_kb)
    server.server_close()
    assert example_kb.head() != head
    assert f"chat {chat_id} turn 1" in git(example_kb.root, "log", "-1", "--format=%s")


@pytest.mark.parametrize(
    ("host", "field"),
    [("127.0.0.1", "--port"), ("no-such-host.invalid", "--host")],
    ids=["busy", "name"],
)
def test_a_server_that_cannot_listen_says_why(
    example_kb: KnowledgeBase, host: str, field: str
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        done = kbmem("--kb", str(example_kb.root), "serve", "--host", host, "--port", port)
    assert done.returncode == 2, done.stderr
    assert f"kbmem: error: {field}: cannot listen on {host}:{port}" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unknown_event_loop_is_refused_at_start(example_kb: KnowledgeBase) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kbmem.cli", "--kb", str(example_kb.root), "serve", "--port", "0"],
        capture_output=True,
        text=True,
        env={**os.environ, "KBMEM_HTTP_LOOP": "trio"},
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "kbmem: error: KBMEM_HTTP_LOOP: 'trio' is not an event loop" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_server_listens_on_ipv6_loopback(example_kb: KnowledgeBase) -> None:
    try:
        server = MemoryServer(("::1", 0), example_kb)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert re.fullmatch(r"http://\[::1\]:\d+", server.url)
        conn = http.client.HTTPConnection("::1", server.server_address[1], timeout=30)
        conn.request("GET", "/v1/health")
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        server.shutdown()
        server.server_close()


def _requests_counted(server: MemoryServer) -> dict[tuple[str, str, str], float]:
    conn = http.client.HTTPConnection(*server.server_address[:2], timeout=30)
    conn.request("GET", "/metrics")  # open on loopback
    text = conn.getresponse().read().decode()
    conn.close()
    return {
        (s.labels["route"], s.labels["method"], s.labels["status"]): s.value
        for family in text_string_to_metric_families(text)
        if family.name == "gam_http_requests"
        for s in family.samples
        if s.name == "gam_http_requests_total"
    }


def test_each_request_is_routed_once_and_counted_by_its_route(
    served: MemoryServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard finds the route and the router hands the request to it without matching
    its path again; the request is counted under the route's pattern, its method and status."""
    from fastapi.routing import APIRouter

    routed: list[str] = []
    original = APIRouter.app

    async def app(self: APIRouter, scope: Any, receive: Any, send: Any) -> None:
        routed.append(scope.get("path", scope["type"]))  # the router looked the route up
        await original(self, scope, receive, send)

    monkeypatch.setattr(APIRouter, "app", app)
    api = client(served)
    before = _requests_counted(served)
    assert api.call("GET", f"/v1/pages/{ROSTER}")[0] == 200
    assert api.call("HEAD", f"/v1/pages/{ROSTER}")[0] == 200
    assert api.call("GET", "/v1/pages/notes/none.md")[0] == 404  # the route's own 404
    assert api.call("POST", "/v1/search", {"query": "pilot customer", "k": 2})[0] == 200
    assert api.call("POST", "/v1/chats/c1/messages", {"message": 5})[0] == 400
    assert api.call("GET", "/v1/search")[0] == 405
    assert api.call("GET", "/v1/nothing")[0] == 404
    after = _requests_counted(served)
    assert routed == []  # /metrics and every /v1 request went straight to its route
    grew = {key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key)}
    assert grew == {
        ("/v1/pages/{page_id}", "GET", "200"): 1,
        ("/v1/pages/{page_id}", "HEAD", "200"): 1,
        ("/v1/pages/{page_id}", "GET", "404"): 1,
        ("/v1/search", "POST", "200"): 1,
        ("/v1/chats/{chat_id}/messages", "POST", "400"): 1,
        ("/v1/search", "GET", "405"): 1,
        ("unmatched", "GET", "404"): 1,
        ("/metrics", "GET", "200"): 1,  # the first reading of /metrics
    }


def test_a_lone_quick_search_is_answered_on_the_event_loop(
    served: MemoryServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search runs without the hop to a worker thread only while it is the server's one
    request, its kind was quick last time and its index serves HEAD; otherwise, in a worker
    (the event loop must not wait for a catch-up, nor hold up other requests for long)."""
    from kbmem.interfaces.routes import research

    monkeypatch.setattr(research, "INLINE_SEARCH_MS", 60_000.0)  # "quick" on a loaded machine
    api = client(served)
    memory = served.memory("default")
    original = memory.search
    ran_in: list[str] = []

    def search(*args: Any, **kwargs: Any) -> Any:
        ran_in.append(threading.current_thread().name)
        return original(*args, **kwargs)

    monkeypatch.setattr(memory, "search", search)
    loop_thread = threading.current_thread().name  # not the server's: a name to differ from

    def searched() -> str:
        status, body, _ = api.call("POST", "/v1/search", {"query": "pilot customer", "k": 3})
        assert status == 200 and body["hits"], body
        return ran_in[-1]

    first = searched()  # its kind's time is not known yet: a worker
    alone = searched()
    assert "AnyIO worker" in first and "AnyIO worker" not in alone and alone != loop_thread
    assert alone == searched()  # the server's event loop thread, each time

    # Another request in flight (its body not all sent yet): the search goes to a worker.
    with socket.create_connection(served.server_address[:2], timeout=30) as held:
        held.sendall(
            b"POST /v1/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {api.token}\r\nContent-Length: 40\r\n\r\n".encode()
            + b'{"query": '
        )
        deadline = time.monotonic() + 30
        while served.state.in_flight < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "AnyIO worker" in searched()
        held.sendall(b'"pilot", "k": 2}'.ljust(30))
        assert held.recv(4096).startswith(b"HTTP/1.1 200")
    deadline = time.monotonic() + 30
    while served.state.in_flight and time.monotonic() < deadline:
        time.sleep(0.01)
    assert searched() == alone

    # The index behind HEAD (a commit the server has not indexed): a worker, which may wait.
    commit_edit(
        served.kb.root,
        f"tenants/default/{ROSTER}",
        lambda old: old + b"\nA new line about the ferry timetable.\n",
    )
    assert not memory.search_ready()
    assert "AnyIO worker" in searched()
    deadline = time.monotonic() + 120
    while not memory.search_ready() and time.monotonic() < deadline:
        time.sleep(0.05)  # the catch-up that search started
    assert searched() == alone
