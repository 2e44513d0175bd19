"""A tenant learns nothing of another's activity, and what the service keeps for tenants (API
tokens, started chats) is neither kept longer nor shown wider than it should be. Real git,
real files, a real token file rewritten by another process."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kbmem.errors import NotFound, PageFormatError
from kbmem.interfaces.service import Memory
from kbmem.interfaces.tokens import TOKENS_FILE, TokenStore
from kbmem.store.repository import KnowledgeBase


def _note(kb: KnowledgeBase, tenant: str, name: str, body: str) -> str:
    path = f"tenants/{tenant}/notes/{name}.md"
    return kb.commit_files({path: f"---\ntitle: {name}\n---\n{body}\n".encode()}, f"Note {name}")


def test_at_resolves_only_the_tenants_own_commits(empty_kb: KnowledgeBase) -> None:
    """``at=`` names the tenant's own commits: another tenant's commit id, full or
    abbreviated, is as unknown as an invented one, HEAD is the tenant's newest commit (not
    the repository's), and ``~N`` counts the tenant's commits, so no N tells how many
    commits others made."""
    mine = [_note(empty_kb, "a", f"a{n}", f"Alpha {n}.") for n in range(2)]
    theirs = [_note(empty_kb, "b", f"b{n}", f"Beta {n}.") for n in range(5)]
    alpha = Memory(empty_kb, "a")
    try:
        assert alpha.list_pages()["commit"] == mine[-1]
        assert alpha.list_pages(at="HEAD~1")["commit"] == mine[0]
        assert alpha.list_pages(at=mine[0][:7])["commit"] == mine[0]
        unknown = {}
        for rev in ("HEAD~2", "HEAD~6", theirs[0], theirs[2][:7], "abcdef1234"):
            with pytest.raises(NotFound) as caught:
                alpha.list_pages(at=rev)
            unknown[rev] = str(caught.value)
        assert all(message == f"no such revision: {rev}" for rev, message in unknown.items())
        with pytest.raises(NotFound):
            alpha.page("notes/a0.md", at=theirs[-1])
        assert alpha.page("notes/a0.md", at=mine[0])["commit"] == mine[0]
        with pytest.raises(NotFound):
            alpha.history(before=theirs[1][:8])
    finally:
        alpha.close()


def test_a_broken_header_names_the_page_id_field(empty_kb: KnowledgeBase) -> None:
    empty_kb.commit_files(
        {"tenants/a/notes/broken.md": b"---\ntitle: [never closed\n---\nBody.\n"}, "Break it"
    )
    alpha = Memory(empty_kb, "a")
    try:
        with pytest.raises(PageFormatError) as caught:
            alpha.page("notes/broken.md")
        assert caught.value.field == "page_id"
        assert "a:notes" not in str(caught.value)
    finally:
        alpha.close()


def test_a_revoked_token_dies_even_when_the_file_keeps_its_size_and_time(tmp_path: Path) -> None:
    """A revoke and a same-length create within the file system's timestamp resolution: the
    cache must see the new content, not the (mtime, size) it had."""
    tokens = TokenStore(tmp_path)
    token, info = tokens.create("a", "laptop")
    assert tokens.tenant_of(token) == "a"
    path = tmp_path / TOKENS_FILE
    before = path.stat()
    # Another process (the CLI) revokes it and creates one of the same length.
    script = (
        "import sys; from pathlib import Path; from kbmem.interfaces.tokens import TokenStore;"
        "t = TokenStore(Path(sys.argv[1])); t.revoke(sys.argv[2]); t.create('a', 'laptoq')"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path), info.id], check=True)
    after = path.stat()
    assert after.st_size == before.st_size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same timestamp tick
    assert tokens.tenant_of(token) is None
    assert [t.name for t in tokens.list()] == ["laptoq"]


def test_the_token_file_is_never_readable_by_others(tmp_path: Path) -> None:
    """Every version of the token file, and every temp file it is written through, is 0600
    from the moment it exists, and the token file is never empty (a server reading it then
    would take it for a broken file) — watched by a thread while tokens are created and
    revoked."""
    seen: set[int] = set()
    sizes: set[int] = set()
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for entry in os.scandir(tmp_path):
                try:
                    found = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                seen.add(stat.S_IMODE(found.st_mode))
                if entry.name == TOKENS_FILE:
                    sizes.add(found.st_size)

    watcher = threading.Thread(target=watch)
    old = os.umask(0o022)
    watcher.start()
    try:
        tokens = TokenStore(tmp_path)
        for n in range(40):
            _token, info = tokens.create("a", f"n{n}")
            if n % 2:
                tokens.revoke(info.id)
    finally:
        stop.set()
        watcher.join()
        os.umask(old)
    assert seen and seen == {0o600}, sorted(oct(m) for m in seen)
    assert sizes and 0 not in sizes


def test_a_chat_closed_before_its_first_turn_leaves_no_file(empty_kb: KnowledgeBase) -> None:
    memory = Memory(empty_kb, "a")
    try:
        chat_id, opened = memory.open_chat()
        assert opened
        assert memory.close_chat(chat_id)["closed"]
        chats = empty_kb.state_dir / "chats"
        left = [p for p in chats.rglob("*") if p.is_file()] if chats.exists() else []
        assert left == []
        with pytest.raises(NotFound):
            memory.open_chat(chat_id)
    finally:
        memory.close()
