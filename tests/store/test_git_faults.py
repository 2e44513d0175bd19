"""The store beside a user's own git: maintenance (gc, repack, prune), symbolic links in the
work tree or in a commit, and a user's commit racing kbmem's. All with real git."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.kbgit import fsck, git, head, status, summit_session

from kbmem.errors import ConflictError, ValidationError
from kbmem.memorize.memorizer import ingest_session
from kbmem.memorize.sessions import session_from_mapping
from kbmem.store import objects, transaction
from kbmem.store.repository import KnowledgeBase

NOTE = "tenants/default/notes/a.md"


def _many_files(tag: str, count: int = 120) -> dict[str, bytes | None]:
    """Files enough that their objects fall into most of git's 256 object folders."""
    return {f"tenants/default/notes/{tag}-{n}.md": f"{tag} {n}\n".encode() for n in range(count)}


def _loose_count(root: Path) -> int:
    found = re.search(r"^count: (\d+)$", git(root, "count-objects", "-v"), re.M)
    assert found
    return int(found[1])


@pytest.mark.parametrize(
    "maintenance",
    [
        ["gc", "--prune=now", "--quiet"],
        ["repack", "-a", "-d", "-q"],
        ["prune", "--expire=now"],
        ["maintenance", "run", "--task=gc", "--quiet"],
    ],
    ids=["gc", "repack", "prune", "maintenance"],
)
def test_writes_survive_git_maintenance_beside_a_long_lived_knowledge_base(
    empty_kb: KnowledgeBase, maintenance: list[str]
) -> None:
    root = empty_kb.root
    first = empty_kb.commit_files(_many_files("before"), "Before maintenance")
    if maintenance[0] == "prune":  # prune removes loose objects only once they are packed
        git(root, "repack", "-d", "-q")
    git(root, *maintenance)
    # The same object after maintenance: the folders it emptied were removed.
    second = empty_kb.commit_files(_many_files("after"), "After maintenance")
    assert second == head(root) and git(root, "rev-parse", "HEAD~1").strip() == first
    assert empty_kb.read_bytes("tenants/default/notes/after-7.md") == b"after 7\n"
    assert empty_kb.read_bytes("tenants/default/notes/before-7.md") == b"before 7\n"
    assert status(root) == ""
    fsck(root)


def test_a_users_commit_that_triggers_auto_gc_does_not_break_the_next_write(
    empty_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = empty_kb.root
    monkeypatch.setattr(objects, "LOOSE_OBJECT_LIMIT", 10**9)  # kbmem leaves them to git
    empty_kb.commit_files(_many_files("mine", 1500), "Many files")
    assert _loose_count(root) > 1500
    git(root, "config", "gc.auto", "2")  # a few loose objects start an auto gc
    git(root, "config", "gc.autoDetach", "false")
    (root / "theirs.txt").write_text("a user's file\n")
    git(root, "add", "theirs.txt")
    git(root, "commit", "-q", "-m", "A user's commit")
    assert _loose_count(root) < 10  # the user's commit ran gc, which emptied the folders
    sha = empty_kb.commit_files(_many_files("next"), "The next write")
    assert sha == head(root)
    fsck(root)


def test_kbmem_packs_its_loose_objects_so_auto_gc_stays_rare(
    empty_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = empty_kb.root
    limit = 256  # a small limit, so that the test writes few objects to pass it
    monkeypatch.setattr(objects, "LOOSE_OBJECT_LIMIT", limit)
    for n in range(12):
        empty_kb.commit_files(_many_files(f"batch{n}", 60), f"Batch {n}")
    assert _loose_count(root) < 2 * limit
    assert empty_kb.read_bytes("tenants/default/notes/batch3-5.md") == b"batch3 5\n"
    assert status(root) == ""
    fsck(root)


# -- symbolic links --------------------------------------------------------------------------


def test_an_uncommitted_symlinked_tenant_folder_is_refused_before_anything_is_written(
    empty_kb: KnowledgeBase, tmp_path: Path
) -> None:
    root = empty_kb.root
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "tenants").mkdir(exist_ok=True)
    os.symlink(elsewhere, root / "tenants" / "c")
    before = head(root)
    with pytest.raises(ValidationError, match=r"tenants/c is a symbolic link"):
        empty_kb.commit_files({"tenants/c/MEMORY.md": b"memory\n"}, "Through a link")
    session = session_from_mapping(
        summit_session("s1", ["We met at the summit.", "Yes, in May."], tenant="c")
    )
    with pytest.raises(ValidationError, match=r"tenants/c is a symbolic link"):
        ingest_session(empty_kb, session)
    assert list(elsewhere.iterdir()) == []
    assert head(root) == before


def test_a_committed_symlinked_tenant_or_page_folder_is_refused(
    empty_kb: KnowledgeBase, tmp_path: Path
) -> None:
    root = empty_kb.root
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "tenants" / "d" / "pages").mkdir(parents=True)
    os.symlink(elsewhere, root / "tenants" / "c")
    os.symlink(elsewhere, root / "tenants" / "d" / "pages" / "s1")
    git(root, "add", "tenants")
    git(root, "commit", "-q", "-m", "Links, by hand")
    before = head(root)
    for relpath in ("tenants/c/MEMORY.md", "tenants/d/pages/s1/1.md"):
        with pytest.raises(ValidationError, match="is a symbolic link") as caught:
            empty_kb.commit_files({relpath: b"x\n"}, "Through a link")
        assert relpath.rsplit("/", 1)[0] in str(caught.value)
    # The link gone from the work tree but still committed: still refused.
    (root / "tenants" / "c").unlink()
    with pytest.raises(ValidationError, match="tenants/c is a symbolic link"):
        empty_kb.commit_files({"tenants/c/MEMORY.md": b"x\n"}, "Through a link")
    # A file that is itself a link is not written through either.
    os.symlink(elsewhere / "target.md", root / "tenants" / "d" / "MEMORY.md")
    with pytest.raises(ValidationError, match=r"tenants/d/MEMORY\.md is a symbolic link"):
        empty_kb.commit_files({"tenants/d/MEMORY.md": b"x\n"}, "Through a link")
    assert list(elsewhere.iterdir()) == []
    assert head(root) == before


# -- a user's commit racing kbmem's ----------------------------------------------------------


class _Raced(KnowledgeBase):
    """Commits by hand (as a user would) between kbmem's read of HEAD and its swap, the
    first ``races`` times; ``touch`` makes each such commit change that path. While kbmem
    holds the index lock (it does when it builds a commit again) no ``git commit`` can run,
    so HEAD is moved by plumbing then, as a script would."""

    races = 1
    touch: str | None = None

    def _build_commit(self, *args: Any, **kwargs: Any) -> tuple[str, str | None] | None:
        built = super()._build_commit(*args, **kwargs)
        if self.races > 0:
            self.races -= 1
            if (self.git_dir / "index.lock").exists():
                old = head(self.root)
                new = git(self.root, "commit-tree", "HEAD^{tree}", "-p", old, "-m", "A script's")
                git(self.root, "update-ref", "HEAD", new.strip(), old)
                return built
            if self.touch:
                (self.root / self.touch).write_text(f"the user's, {self.races}\n")
                git(self.root, "add", self.touch)
            git(self.root, "commit", "-q", "--allow-empty", "-m", "A commit by hand")
        return built


def test_a_lost_compare_and_swap_is_retried_on_the_new_head(empty_kb: KnowledgeBase) -> None:
    root = empty_kb.root
    empty_kb.commit_files({NOTE: b"old\n"}, "Old")
    raced = _Raced(root)
    sha = raced.commit_files({NOTE: b"new\n"}, "Wins on the second try")
    assert sha == head(root)
    assert git(root, "log", "-2", "--format=%s").splitlines() == [
        "Wins on the second try",
        "A commit by hand",
    ]
    assert raced.read_bytes(NOTE) == b"new\n" and (root / NOTE).read_bytes() == b"new\n"
    assert status(root) == ""
    fsck(root)


def test_a_swap_lost_every_time_is_a_conflict_and_keeps_the_users_commits(
    empty_kb: KnowledgeBase,
) -> None:
    root = empty_kb.root
    empty_kb.commit_files({NOTE: b"old\n"}, "Old")
    raced = _Raced(root)
    raced.races = 1000
    with pytest.raises(ConflictError, match="kept moving") as caught:
        raced.commit_files({NOTE: b"new\n"}, "Never lands")
    assert caught.value.http_status == 409
    assert 1000 - raced.races == transaction.CAS_ATTEMPTS
    assert git(root, "log", f"-{transaction.CAS_ATTEMPTS}", "--format=%s").splitlines() == [
        *["A script's"] * (transaction.CAS_ATTEMPTS - 1),
        "A commit by hand",
    ]
    assert (root / NOTE).read_bytes() == b"old\n"  # the work tree is put back
    assert status(root) == ""
    fsck(root)


def test_a_racing_commit_of_the_same_file_is_a_conflict_not_overwritten(
    empty_kb: KnowledgeBase,
) -> None:
    root = empty_kb.root
    empty_kb.commit_files({NOTE: b"old\n"}, "Old")
    raced = _Raced(root)
    raced.touch = NOTE
    with pytest.raises(ConflictError, match=NOTE):
        raced.commit_files({NOTE: b"kbmem's\n"}, "Would overwrite theirs")
    assert raced.races == 0  # not retried: kbmem's text was made from the old file
    assert raced.read_bytes(NOTE) == b"the user's, 0\n"
    assert (root / NOTE).read_bytes() == b"the user's, 0\n"
    assert status(root) == ""


# Run by git whenever a ref moves: once kbmem's HEAD has moved ("committed"), what the user's
# index holds beyond HEAD, as a "git commit" by hand started at that moment would commit it.
AT_EACH_MOVE = """#!/bin/sh
[ "$1" = committed ] || exit 0
cat > /dev/null
{ git diff --cached --name-status HEAD; echo "--"; } >> "$(git rev-parse --git-dir)/moves.log"
"""


def test_the_users_index_already_holds_kbmems_files_when_head_shows_its_commit(
    empty_kb: KnowledgeBase, tmp_path: Path
) -> None:
    """A user's ``git commit`` writes its tree from the user's index: one started as soon
    as kbmem's commit is HEAD must find kbmem's files there, or it commits a tree without
    them on top of kbmem's commit (the soak benchmark lost sessions that way, when kbmem
    moved HEAD first and the index after). Git's reference-transaction hook looks at the
    index at the moment each of kbmem's commits becomes HEAD."""
    root = empty_kb.root
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "reference-transaction").write_text(AT_EACH_MOVE)
    (hooks / "reference-transaction").chmod(0o755)
    git(root, "config", "core.hooksPath", str(hooks))
    for n in range(20):
        writes = {f"tenants/default/notes/page-{n}.md": f"page {n}\n".encode(), NOTE: b"%d\n" % n}
        empty_kb.commit_files(writes, f"Page {n}")
    moves = (root / ".git" / "moves.log").read_text().split("--\n")
    assert moves == [""] * 21  # 20 moves, each with the index already as HEAD has it
    assert status(root) == ""
