"""Every writer syncs in the background, through a real git daemon on loopback: a served
knowledge base and a chat on two clones converge with no ``kbmem sync``; a remote that goes
down leaves writes working and health saying so, and the memory catches up when it returns;
commits that arrive are indexed and found; a write first joins what the last fetch saw."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers.gitserver import GitServer
from helpers.kbgit import ROOT, git, summit_session, write_json
from helpers.talk import talk

from kbmem.cli import main
from kbmem.cli.sync_cmds import catch_up_indexes, finish_background_sync, start_background_sync
from kbmem.index.tenant import TenantIndex
from kbmem.interfaces.server import MemoryServer
from kbmem.interfaces.tokens import TokenStore
from kbmem.memorize.memorizer import ingest_session
from kbmem.memorize.sessions import session_from_mapping
from kbmem.store.repository import KnowledgeBase
from kbmem.sync.background import BackgroundSync, sync_status
from kbmem.sync.engine import fetch, remote_of, sync

Replicas = Callable[[int], list[KnowledgeBase]]
FAST = {"KBMEM_SYNC__INTERVAL_S": "0.5"}


def wait_for(check: Callable[[], Any], limit: float = 60, what: str = "") -> Any:
    """``check()``'s first truthy value, polled until ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not within {limit:g} s: {what}")


def ingest(kb: KnowledgeBase, sid: str, text: str) -> None:
    ingest_session(kb, session_from_mapping(talk("default", sid, [("Ada", text), ("Bo", "ok")])))


def record(sid: str) -> str:
    return f"tenants/default/sessions/{sid}.yaml"


def on_remote(server: GitServer, path: str) -> bool:
    bare = server.base / "memory.git"
    done = subprocess.run(["git", "-C", str(bare), "cat-file", "-e", f"main:{path}"], check=False)
    return done.returncode == 0


def http(url: str, method: str = "GET", body: Any = None, token: str | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("KBMEM_MODEL", "KBMEM_KB")}
    return {**clean, **FAST, "PYTHONPATH": str(ROOT)}


@contextmanager
def served(kb: KnowledgeBase) -> Iterator[MemoryServer]:
    """``kbmem serve``'s server and background sync, in this process."""
    server = MemoryServer(("127.0.0.1", 0), kb)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    syncing = start_background_sync(kb)
    assert syncing is not None
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        finish_background_sync(syncing)
        thread.join(10)


def test_a_served_kb_and_a_chat_converge_without_kbmem_sync(
    replicas: Replicas, server: GitServer
) -> None:
    a, b = replicas(2)
    token, _info = TokenStore(a.state_dir).create("default", "test")
    port = free_port()
    serve = subprocess.Popen(
        [sys.executable, "-m", "kbmem", "--kb", str(a.root), "serve", "--port", str(port)],
        cwd=ROOT,
        env=env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            try:
                return http(f"{url}/v1/health")["status"] == "ok"
            except OSError:
                return False

        wait_for(up, 60, "kbmem serve answering")
        session = summit_session("s-served", ["The ferry to Skerrick leaves at nine.", "Noted."])
        http(f"{url}/v1/sessions", "POST", session, token)
        # Served on A, pushed by A's background sync after the commit: no kbmem sync.
        wait_for(lambda: on_remote(server, record("s-served")), 30, "A pushing its session")

        chat = subprocess.run(
            [sys.executable, "-m", "kbmem", "--kb", str(b.root), "chat", "--no-tui", "--json"],
            cwd=ROOT,
            env=env(),
            input="When does the ferry to Skerrick leave?\n",
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert chat.returncode == 0, chat.stderr
        assert "syncing with origin" in chat.stderr
        # B's chat pulled A's session as it started, and pushed its turn as it closed.
        assert b.blob_id(record("s-served")) is not None
        turns = b.list_files("tenants/default/turns")
        assert turns and all(on_remote(server, path) for path in turns)
        # A's server pulls B's turn within its interval: both clones end at one HEAD.
        wait_for(lambda: a.head() == b.head(), 30, "A pulling B's chat")
        assert all(a.blob_id(path) == blob for path, blob in turns.items())
        health = http(f"{url}/v1/health")["sync"]
        assert health["configured"] and health["enabled"] and health["last_error"] is None
        assert health["ahead"] == 0 and health["behind"] == 0 and health["last_sync"]
        assert "url" not in health and health["conflicts"] == 0
    finally:
        serve.send_signal(signal.SIGTERM)
        _out, err = serve.communicate(timeout=60)
    assert serve.returncode == 0, err
    assert "syncing with origin" in err
    assert git(a.root, "status", "--porcelain") == "" and git(b.root, "status", "--porcelain") == ""


def test_remote_down_writes_succeed_health_says_so_and_it_catches_up(
    replicas: Replicas, server: GitServer
) -> None:
    a, b = replicas(2)
    a.settings.data["sync"]["interval_s"] = 0.3
    token, _info = TokenStore(a.state_dir).create("default", "test")
    with served(a) as memory_server:
        url = memory_server.url
        wait_for(lambda: http(f"{url}/v1/health")["sync"]["last_sync"], 30, "a first sync")
        server.stop()
        session = summit_session("s-offline", ["Written while the remote was down."])
        assert http(f"{url}/v1/sessions", "POST", session, token)["status"] == "created"
        assert a.blob_id(record("s-offline")) is not None  # the write stayed here

        def offline() -> dict[str, Any] | None:
            shown: dict[str, Any] = http(f"{url}/v1/health")["sync"]
            error = shown["last_error"] or ""
            return shown if "cannot be reached" in error and shown["ahead"] else None

        health = wait_for(offline, 30, "health saying the remote cannot be reached")
        assert health["ahead"] >= 1 and health["configured"]
        assert sync_status(a).summary().startswith(f"sync ↑{health['ahead']} ↓0 · offline")

        server.start()

        def caught_up() -> bool:
            shown = http(f"{url}/v1/health")["sync"]
            return shown["last_error"] is None and shown["ahead"] == 0

        wait_for(caught_up, 60, "catching up once the remote is back")
    assert on_remote(server, record("s-offline"))
    sync(b)
    assert b.blob_id(record("s-offline")) == a.blob_id(record("s-offline"))


def test_kbmem_ingest_syncs_after_its_commit_and_keeps_it_when_the_remote_is_down(
    replicas: Replicas, server: GitServer, tmp_path: Path, capsys
) -> None:
    a, b = replicas(2)
    first = write_json(tmp_path / "one.json", summit_session("s-one", ["Kept while offline."]))
    second = write_json(tmp_path / "two.json", summit_session("s-two", ["Sent with the first."]))
    server.stop()
    assert main(["--kb", str(a.root), "ingest", str(first)]) == 0
    err = capsys.readouterr().err
    assert "cannot be reached" in err and "1 ahead of origin" in err
    assert a.blob_id(record("s-one")) is not None and sync_status(a).ahead == 1
    server.start()
    assert main(["--kb", str(a.root), "ingest", str(second)]) == 0
    assert "sync:" not in capsys.readouterr().err
    assert sync_status(a).ahead == 0 and server.head() == a.head()
    sync(b)
    assert b.blob_id(record("s-one")) and b.blob_id(record("s-two"))


def test_commits_pulled_in_the_background_are_indexed_and_found(replicas: Replicas) -> None:
    a, b = replicas(2)
    index = TenantIndex(b, "default")
    index.sync()
    assert not index.bm25("lighthouse quoin", 5)  # a search opens it, as a server's would
    with BackgroundSync(b, interval=0.3, on_pull=lambda: catch_up_indexes(b)):
        ingest(a, "s-pulled", "The lighthouse keeper repaints the quoin every spring.")
        sync(a)
        wait_for(lambda: b.blob_id(record("s-pulled")), 30, "B pulling A's session")

        def indexed() -> bool:
            current = index.current()
            return current is not None and current.commit == b.head()

        # Indexed by the background sync's follower, not by a search.
        wait_for(indexed, 120, "B indexing what it pulled")
    hits = index.bm25("lighthouse quoin", 5)
    assert hits and hits[0].page_id.startswith("s-pulled/")


def test_a_write_first_joins_what_the_last_fetch_saw_ahead(replicas: Replicas) -> None:
    a, b = replicas(2)
    with BackgroundSync(b, interval=3600, debounce=3600) as syncing:
        wait_for(syncing.first_sync.is_set, 30, "the first sync")
        ingest(a, "s-ahead", "Committed on A first.")
        sync(a)
        fetch(b, remote_of(b))  # B now knows the remote is ahead; nothing joined yet
        assert sync_status(b).behind == 1
        ingest(b, "s-after", "Written on B once A's session was there.")
        # Joined before the write: B's commit sits on A's, with no merge commit.
        parents = git(b.root, "log", "-1", "--format=%P").split()
        assert parents == [a.head()]
        assert b.blob_id(record("s-ahead")) is not None


def test_mcp_lists_and_reads_the_sync_status_only_when_the_memory_syncs(
    replicas: Replicas, empty_kb: KnowledgeBase
) -> None:
    import anyio
    from mcp import Client

    from kbmem.interfaces.mcp_sdk.stdio import build
    from kbmem.interfaces.service import Memory

    (a,) = replicas(1)

    async def resources(kb: KnowledgeBase) -> tuple[list[str], dict[str, Any] | None]:
        handlers = build(Memory(kb, "default"))
        try:
            async with Client(handlers.server) as client:
                uris = [str(r.uri) for r in (await client.list_resources()).resources]
                if "kbmem://status" not in uris:
                    return uris, None
                read = await client.read_resource("kbmem://status")
                return uris, json.loads(read.contents[0].text)  # type: ignore[union-attr]
        finally:
            handlers.close()

    uris, shown = anyio.run(resources, a)
    assert uris[:2] == ["kbmem://MEMORY.md", "kbmem://status"]
    assert shown is not None and shown["status"] == "ok"
    assert shown["sync"]["configured"] and shown["sync"]["ahead"] == 0
    assert shown["sync"]["last_sync"] and "url" not in shown["sync"]
    uris, shown = anyio.run(resources, empty_kb)  # no remote: nothing new
    assert "kbmem://status" not in uris and shown is None


def test_sync_status_follows_every_change_and_forks_git_only_after_one(
    replicas: Replicas, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Health is public and polled: an unchanged memory answers from what git said last time,
    and each thing the answer depends on (a commit, a fetch, git's config) is seen at once."""
    import kbmem.sync.background as background

    a, b = replicas(2)
    runs: list[tuple[str, ...]] = []
    real_run = background.git_run

    def counted(kb: KnowledgeBase, *args: str, **kw: Any) -> Any:
        runs.append(args)
        return real_run(kb, *args, **kw)

    monkeypatch.setattr(background, "git_run", counted)
    monkeypatch.setattr("kbmem.sync.engine.git_run", counted)
    first = sync_status(b)
    assert (first.ahead, first.behind, first.configured) == (0, 0, True)
    runs.clear()
    for _ in range(20):
        assert sync_status(b) == first
    assert runs == []

    ingest(b, "s-here", "A commit on B the remote has not seen.")
    assert sync_status(b).ahead == 1
    ingest(a, "s-there", "A commit on A.")
    sync(a)
    fetch(b, remote_of(b))
    assert (sync_status(b).ahead, sync_status(b).behind) == (1, 1)

    git(b.root, "remote", "set-url", "origin", "git://127.0.0.1:9/elsewhere.git")
    assert sync_status(b).url == "git://127.0.0.1:9/elsewhere.git"
    git(b.root, "remote", "remove", "origin")
    assert sync_status(b).configured is False
