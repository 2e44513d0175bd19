"""The knowledge base's git discipline: commits of exactly kbmem's paths, built in-process as
git would build them, a compare-and-swap on HEAD, one writer across processes, and a crash
that leaves the old state or the new one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers.kbgit import ROOT, commit_count, fsck, git, head, status

from kbmem.errors import LockTimeout, NotFound, UncommittedChanges, ValidationError
from kbmem.store.repository import KnowledgeBase

NOTE = "tenants/default/notes/a.md"


def _user_changes(root: Path) -> dict[str, bytes]:
    """Give the repository a user's own work in progress: staged edits, a staged new file,
    an unstaged edit and an untracked file. Returns the files' contents."""
    (root / "README.md").write_text("# Edited by hand, staged\n")
    (root / "staged-new.txt").write_text("new and staged\n")
    git(root, "add", "README.md", "staged-new.txt")
    with (root / "kbmem.yaml").open("a") as handle:
        handle.write("# an unstaged comment\n")
    (root / "untracked.txt").write_text("not added\n")
    return {
        name: (root / name).read_bytes()
        for name in ("README.md", "staged-new.txt", "kbmem.yaml", "untracked.txt")
    }


def test_commit_holds_exactly_the_written_paths_and_never_the_users_changes(
    empty_kb: KnowledgeBase,
) -> None:
    root = empty_kb.root
    before = head(root)
    readme_at_head = git(root, "show", "HEAD:README.md")
    user_files = _user_changes(root)
    staged = git(root, "diff", "--cached", "--name-status")
    unstaged = git(root, "diff", "--name-status")

    sha = empty_kb.commit_files(
        {NOTE: b"# A note\n", "tenants/default/MEMORY.md": b"# Memory\n"}, "Add a note"
    )

    assert sha == head(root)
    assert git(root, "rev-parse", "HEAD~1").strip() == before
    changed = git(root, "show", "--format=", "--name-status", "HEAD").splitlines()
    assert sorted(changed) == ["A\ttenants/default/MEMORY.md", "A\t" + NOTE]
    assert git(root, "show", "HEAD:README.md") == readme_at_head
    # The user's work in progress is exactly as it was: staged, unstaged and untracked.
    assert git(root, "diff", "--cached", "--name-status") == staged
    assert git(root, "diff", "--name-status") == unstaged
    for name, data in user_files.items():
        assert (root / name).read_bytes() == data
    assert "?? untracked.txt" in status(root)
    # kbmem's own files are committed, not shown as changes.
    assert "tenants/" not in status(root)
    fsck(root)


@pytest.mark.parametrize("how", ["unstaged", "staged", "untracked"])
def test_a_users_uncommitted_edit_of_a_path_kbmem_writes_is_refused_never_overwritten(
    empty_kb: KnowledgeBase, how: str
) -> None:
    root = empty_kb.root
    memory = "tenants/default/MEMORY.md"
    if how != "untracked":
        empty_kb.commit_files({memory: b"# Memory\n"}, "Add memory")
    before, mine = head(root), b"# Memory\n- a line the user is still writing\n"
    (root / memory).parent.mkdir(parents=True, exist_ok=True)
    (root / memory).write_bytes(mine)
    if how == "staged":
        git(root, "add", memory)
    status_before = status(root)

    for writes in ({NOTE: b"# A note\n", memory: b"# Memory\n- kbmem's line\n"}, {memory: None}):
        with pytest.raises(UncommittedChanges, match=f"{memory}: changed in the work tree"):
            empty_kb.commit_files(writes, "Would overwrite the user's edit")
        assert head(root) == before
        assert (root / memory).read_bytes() == mine
        assert not (root / NOTE).exists()
        assert status(root) == status_before
    # Writing exactly what the file already holds loses nothing, and once the user has
    # committed (here: put the edit aside), kbmem writes as usual.
    assert empty_kb.commit_files({memory: mine}, "Same bytes as the work tree") is not None
    assert (root / memory).read_bytes() == mine
    assert empty_kb.commit_files({memory: b"# Memory\n- kbmem's line\n"}, "Now it may") is not None
    assert status(root) == ""
    fsck(root)


def test_files_git_checked_out_through_a_filter_are_not_taken_for_edits(
    empty_kb: KnowledgeBase,
) -> None:
    root = empty_kb.root
    empty_kb.commit_files({NOTE: b"line one\nline two\n"}, "Add a note")
    # With core.autocrlf, git writes CRLF into the work tree: other bytes, the same content.
    git(root, "config", "core.autocrlf", "true")
    (root / NOTE).unlink()
    git(root, "checkout", "--", NOTE)
    assert (root / NOTE).read_bytes() == b"line one\r\nline two\r\n"
    assert empty_kb.commit_files({NOTE: b"line one\nline three\n"}, "Edit the note")
    assert empty_kb.read_bytes(NOTE) == b"line one\nline three\n"


def test_same_content_makes_no_commit(empty_kb: KnowledgeBase) -> None:
    first = empty_kb.commit_files({NOTE: b"same\n"}, "Add")
    count = commit_count(empty_kb.root)
    assert empty_kb.commit_files({NOTE: b"same\n"}, "Add again") is None
    assert head(empty_kb.root) == first
    assert commit_count(empty_kb.root) == count


def test_delete_removes_the_file_and_the_folders_it_leaves_empty(empty_kb: KnowledgeBase) -> None:
    root = empty_kb.root
    deep = "tenants/t1/pages/s1/1.md"
    empty_kb.commit_files({deep: b"x", NOTE: b"y"}, "Add")
    empty_kb.commit_files({deep: None}, "Delete")
    assert not (root / deep).exists()
    assert git(root, "ls-tree", "-r", "--name-only", "HEAD", "tenants/").split() == [NOTE]
    assert git(root, "ls-tree", "-d", "HEAD", "tenants/t1") == ""
    assert empty_kb.commit_files({"tenants/none/x.md": None}, "Delete nothing") is None
    fsck(root)


def test_trees_are_the_ones_git_itself_would_write(empty_kb: KnowledgeBase, tmp_path) -> None:
    root = empty_kb.root
    # Names whose order differs between a plain sort and git's (a folder sorts as 'name/').
    names = ["foo.md", "foo/1.md", "foo0.md", "foo-a.md", "Foo.md", "é.md", "foo/bar/2.md", "a"]
    script = root / "tool.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    git(root, "add", "tool.sh")
    git(root, "commit", "-q", "-m", "Add a tool by hand")
    empty_kb.commit_files({f"x/{n}": n.encode() for n in names}, "Add tricky names")
    empty_kb.commit_files({"tool.sh": b"#!/bin/sh\necho kbmem\n", "x/foo/1.md": None}, "Edit")
    fsck(root)
    # git rebuilds the tree from an index read from ours: the same id means the same bytes.
    env = {"GIT_INDEX_FILE": str(tmp_path / "check-index")}
    git(root, "read-tree", "HEAD", env=env)
    assert git(root, "write-tree", env=env).strip() == git(root, "rev-parse", "HEAD^{tree}").strip()
    # An executable file that kbmem rewrites stays executable.
    assert git(root, "ls-tree", "HEAD", "tool.sh").startswith("100755 blob ")
    assert status(root) == ""


@pytest.mark.parametrize(
    ("date", "iso"),
    [
        ("2026-01-05T09:30:00+01:00", "2026-01-05T09:30:00+01:00"),
        ("2026-01-05T09:30:00Z", "2026-01-05T09:30:00+00:00"),
        ("2026-01-05T09:30:00-05:30", "2026-01-05T09:30:00-05:30"),
        ("1767605400 +0000", "2026-01-05T09:30:00+00:00"),
    ],
)
def test_commit_dates(empty_kb: KnowledgeBase, date: str, iso: str) -> None:
    empty_kb.commit_files({NOTE: date.encode()}, "Dated", date=date)
    assert git(empty_kb.root, "log", "-1", "--format=%aI|%cI").strip() == f"{iso}|{iso}"


def test_a_bad_date_writes_nothing(empty_kb: KnowledgeBase) -> None:
    before = head(empty_kb.root)
    with pytest.raises(ValidationError, match="date"):
        empty_kb.commit_files({NOTE: b"x"}, "Dated", date="last Tuesday")
    assert head(empty_kb.root) == before
    assert not (empty_kb.root / NOTE).exists()


@pytest.mark.parametrize(
    "path",
    ["../x.md", "/abs.md", "a//b.md", "a/./b.md", ".git/config", ".kbmem/x", "", "a\nb", "a\0b"],
)
def test_paths_kbmem_may_not_write(empty_kb: KnowledgeBase, path: str) -> None:
    before = head(empty_kb.root)
    with pytest.raises(ValidationError, match="path"):
        empty_kb.commit_files({NOTE: b"ok", path: b"bad"}, "Bad")
    assert head(empty_kb.root) == before
    assert not (empty_kb.root / NOTE).exists()


def test_read_a_file_at_an_older_commit(empty_kb: KnowledgeBase) -> None:
    old = empty_kb.commit_files({NOTE: b"version 1\n"}, "v1")
    new = empty_kb.commit_files({NOTE: b"version 2\n"}, "v2")
    assert empty_kb.read_bytes(NOTE, old) == b"version 1\n"
    assert empty_kb.read_bytes(NOTE) == b"version 2\n"
    assert empty_kb.read_bytes(NOTE, "HEAD~1") == b"version 1\n"
    assert empty_kb.blob_id(NOTE, old) != empty_kb.blob_id(NOTE, new)
    assert empty_kb.blob_id("tenants", new) is None  # a folder is not a file
    with pytest.raises(NotFound):
        empty_kb.read_bytes("tenants/default/notes/none.md")
    with pytest.raises(NotFound):
        empty_kb.read_bytes("tenants/default/notes")
    with pytest.raises(NotFound):
        empty_kb.read_bytes(NOTE, "no-such-branch")
    for rev in ("", "-n1", "--upload-pack=x", "HEAD\nHEAD"):
        with pytest.raises(ValidationError):
            empty_kb.read_bytes(NOTE, rev)
    assert "-version 1\n+version 2\n" in empty_kb.diff(old, new, NOTE)


def test_a_knowledge_base_must_be_a_repository_top(tmp_path: Path, empty_kb) -> None:
    with pytest.raises(NotFound, match="kbmem init"):
        KnowledgeBase(tmp_path / "nowhere")
    (empty_kb.root / "sub").mkdir()
    with pytest.raises(NotFound, match="not a kbmem knowledge base"):
        KnowledgeBase(empty_kb.root / "sub")


def _spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


HOLD_LOCK = """
    import sys, time
    from kbmem.store.repository import KnowledgeBase
    kb = KnowledgeBase(sys.argv[1])
    with kb.write_lock():
        print("locked", flush=True)
        time.sleep(30)
"""


def test_one_writer_across_processes_and_readers_never_wait(empty_kb: KnowledgeBase) -> None:
    empty_kb.commit_files({NOTE: b"v1"}, "v1")
    holder = _spawn(HOLD_LOCK, str(empty_kb.root))
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        with (
            pytest.raises(LockTimeout, match=r"another kbmem process .* for over 0\.3 s;"),
            empty_kb.write_lock(timeout=0.3),
        ):
            pass
        assert time.monotonic() - started < 5
        assert empty_kb.read_bytes(NOTE) == b"v1"  # reading needs no lock
    finally:
        holder.kill()
        holder.wait()
    # The lock dies with its holder.
    assert empty_kb.commit_files({NOTE: b"v2"}, "v2") == head(empty_kb.root)


def dies_in(method: str, files: str) -> str:
    """A script that writes ``files`` (a Python dict literal) in one commit and is killed when
    the write reaches ``method`` of KnowledgeBase."""
    return f"""
    import os, signal, sys
    from kbmem.store.repository import KnowledgeBase

    class Dies(KnowledgeBase):
        def {method}(self, *args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)

    Dies(sys.argv[1]).commit_files({files}, "Never lands")
"""


DIE_BEFORE_COMMIT = dies_in(
    "_swap_head",
    '{"tenants/default/MEMORY.md": b"half of a new memory", '
    '"tenants/default/notes/new.md": b"a new page", "tenants/default/notes/a.md": None}',
)


def test_a_write_killed_before_its_commit_is_undone_by_the_next_writer(
    empty_kb: KnowledgeBase,
) -> None:
    root = empty_kb.root
    empty_kb.commit_files({"tenants/default/MEMORY.md": b"old memory\n", NOTE: b"note\n"}, "Old")
    before = head(root)
    dying = _spawn(DIE_BEFORE_COMMIT, str(root))
    dying.communicate(timeout=60)
    assert dying.returncode == -signal.SIGKILL
    # HEAD is the old commit; the work tree holds the dead writer's files for now.
    assert head(root) == before
    fsck(root)
    assert (root / "tenants/default/notes/new.md").exists()
    assert (root / "kbmem.yaml").exists()
    # The next writer (here: anyone taking the lock) puts the work tree back.
    with empty_kb.write_lock():
        pass
    assert (root / "tenants/default/MEMORY.md").read_bytes() == b"old memory\n"
    assert (root / NOTE).read_bytes() == b"note\n"
    assert not (root / "tenants/default/notes/new.md").exists()
    assert status(root) == ""
    assert not (root / ".kbmem" / "pending-write").exists()


DIE_WHILE_WRITING = dies_in(
    "_build_commit",
    '{"tenants/default/notes/a.md": b"new text\\n", "tenants/default/notes/b.md": b"new\\n"}',
)


def test_temp_files_a_killed_write_leaves_are_never_shown_and_only_they_are_removed(
    empty_kb: KnowledgeBase,
) -> None:
    """A writer killed while its files are half written leaves temp files beside them: git
    status never shows them (the user would take them for their own, or commit them), and
    the next writer removes them, and no file of the user's that looks alike."""
    root = empty_kb.root
    before = empty_kb.commit_files({NOTE: b"old text\n"}, "Old")
    exclude = Path(git(root, "rev-parse", "--git-common-dir").strip())
    exclude = (exclude if exclude.is_absolute() else root / exclude) / "info" / "exclude"
    exclude.write_text("# the user's own\nmy-own-pattern")  # no final newline
    KnowledgeBase(root)  # opening the knowledge base adds kbmem's rule, once
    KnowledgeBase(root)
    lines = exclude.read_text().splitlines()
    assert lines[:2] == ["# the user's own", "my-own-pattern"]
    assert lines.count(".*.kbmem-????????.tmp") == 1
    notes = root / "tenants/default/notes"
    theirs = {
        ".a.md.backup.tmp": b"the user's backup\n",
        ".a.md.abcd1234.tmp": b"another of theirs\n",
        ".a.md.kbmem-notes.tmp": b"and another\n",
    }
    for name, data in theirs.items():
        (notes / name).write_bytes(data)
    shown = status(root)
    dying = _spawn(DIE_WHILE_WRITING, str(root))
    dying.communicate(timeout=60)
    assert dying.returncode == -signal.SIGKILL
    left = sorted(p.name for p in notes.iterdir() if p.name.endswith(".tmp"))
    assert len(left) == len(theirs) + 2  # a temp file beside each file of the dead write
    assert status(root) == shown and all(name in shown for name in theirs)
    assert head(root) == before
    with empty_kb.write_lock():
        pass
    assert sorted(p.name for p in notes.iterdir() if p.name.endswith(".tmp")) == sorted(theirs)
    assert all((notes / name).read_bytes() == data for name, data in theirs.items())
    assert (notes / "a.md").read_bytes() == b"old text\n"
    assert exclude.read_text().splitlines() == lines


DIE_DURING_SWAP = """
    import os, signal, sys
    from kbmem.store import userindex
    from kbmem.store.repository import KnowledgeBase

    publish = userindex._publish

    def dies(staged, git_dir):  # the user's index is kbmem's, HEAD locked by git, still old
        publish(staged, git_dir)
        os.kill(os.getpid(), signal.SIGKILL)

    userindex._publish = dies
    kb = KnowledgeBase(sys.argv[1])
    kb.commit_files({"tenants/default/notes/a.md": b"new text\\n"}, "Never lands")
"""


def _killed_mid_swap(script: str, root: Path) -> None:
    """Run ``script`` until it kills itself, then wait for the git update-ref it started,
    which may still be running, to end."""
    dying = _spawn(script, str(root))
    dying.communicate(timeout=60)
    assert dying.returncode == -signal.SIGKILL
    for _ in range(100):
        if not (root / ".git" / "refs" / "heads" / "main.lock").exists():
            break
        time.sleep(0.05)


def test_a_write_killed_while_head_moves_leaves_the_old_commit_and_no_index_lock(
    empty_kb: KnowledgeBase,
) -> None:
    """Killed holding git's index lock, with the index already kbmem's and HEAD not yet
    moved: git aborts the half-done swap, and the next writer removes the lock (until then a
    user's git commit is refused, as git refuses it beside any crashed git command) and puts
    the index back as HEAD has it."""
    root = empty_kb.root
    before = empty_kb.commit_files({NOTE: b"old text\n"}, "Old")
    _killed_mid_swap(DIE_DURING_SWAP, root)
    assert head(root) == before
    fsck(root)
    assert (root / ".git" / "index.lock").exists()
    assert git(root, "diff", "--cached", "--name-only") == f"{NOTE}\n"  # killed after that
    (root / "mine.md").write_text("the user's\n")
    refused = subprocess.run(["git", "add", "mine.md"], cwd=root, capture_output=True, text=True)
    assert refused.returncode != 0 and "index.lock" in refused.stderr
    with empty_kb.write_lock():
        pass
    assert not (root / ".git" / "index.lock").exists()
    assert sorted(p.name for p in (root / ".git").glob("index*")) == ["index"]
    assert empty_kb.read_bytes(NOTE) == b"old text\n"
    assert (root / NOTE).read_bytes() == b"old text\n"
    assert status(root) == "?? mine.md\n"
    git(root, "add", "mine.md")
    git(root, "commit", "-q", "-m", "The user's own")
    assert status(root) == ""


# A filesystem without hard links (FAT, some network and FUSE mounts) cannot be mounted
# here; this fake of one makes link(2) fail the way those do, in the writer's process only.
NO_HARD_LINKS = """
    import errno, os, sys
    from kbmem.store import userindex

    def no_links(src, dst, *args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    os.link = no_links
"""


def test_without_hard_links_the_index_lock_is_taken_and_a_dead_writers_lock_recovered(
    empty_kb: KnowledgeBase,
) -> None:
    """Where link(2) fails, writes still work (the lock is made by exclusive create and says
    the journal's token); a writer killed holding it leaves a lock the next writer knows as
    kbmem's and removes, while a lock git holds is left alone."""
    root = empty_kb.root
    lock = root / ".git" / "index.lock"
    writes = (
        NO_HARD_LINKS
        + """
    from kbmem.store.repository import KnowledgeBase
    kb = KnowledgeBase(sys.argv[1])
    kb.commit_files({"tenants/default/notes/a.md": b"linkless\\n"}, "No links")
"""
    )
    done = _spawn(writes, str(root))
    _out, err = done.communicate(timeout=60)
    assert done.returncode == 0, err
    assert empty_kb.read_bytes(NOTE) == b"linkless\n" and status(root) == ""
    assert not lock.exists()
    before = head(root)
    _killed_mid_swap(NO_HARD_LINKS + DIE_DURING_SWAP, root)
    assert head(root) == before
    assert lock.exists() and lock.read_bytes().startswith(b"kbmem ")
    with empty_kb.write_lock():
        pass
    assert not lock.exists()
    assert status(root) == "" and empty_kb.read_bytes(NOTE) == b"linkless\n"
    # A lock a git command holds, beside a journal a dead writer left, is not kbmem's.
    (root / ".git" / "index.kbmem-held").write_bytes(b"kbmem 0123\n")
    lock.write_bytes(b"DIRC a git index being written")
    with empty_kb.write_lock():
        pass
    assert lock.read_bytes() == b"DIRC a git index being written"
    lock.unlink()


def test_objects_are_written_read_only_like_gits(empty_kb: KnowledgeBase) -> None:
    sha = empty_kb.commit_files({NOTE: b"x"}, "x")
    assert sha is not None
    path = empty_kb.root / ".git" / "objects" / sha[:2] / sha[2:]
    assert path.exists() and (os.stat(path).st_mode & 0o777) == 0o444
    assert not list((empty_kb.root / ".git" / "objects").glob("*/tmp_obj_*"))


def test_writers_always_read_what_git_has(empty_kb: KnowledgeBase) -> None:
    """Two knowledge-base objects on one repository (as two processes would be) take turns
    writing; each reads the other's commits exactly as git shows them, whatever either has
    remembered of its own."""
    root = empty_kb.root
    other = KnowledgeBase(root)
    paths = [NOTE, "tenants/default/MEMORY.md", "tenants/x/pages/s/1.md", "top.md"]
    for n in range(6):
        writer, reader = (empty_kb, other) if n % 2 == 0 else (other, empty_kb)
        writes: dict[str, bytes | None] = {p: f"{p} v{n}\n".encode() for p in paths[: n % 4 + 1]}
        if n == 4:
            writes["tenants/x/pages/s/1.md"] = None
        writer.commit_files(writes, f"Write {n}")
        for kb in (writer, reader):
            for path in [*paths, "tenants", "tenants/default", "top.md/x", "none.md"]:
                shown = subprocess.run(
                    ["git", "rev-parse", "--verify", "-q", f"HEAD:{path}"],
                    cwd=root,
                    capture_output=True,
                    text=True,
                ).stdout.strip()
                kind = git(root, "cat-file", "-t", shown).strip() if shown else None
                assert kb.blob_id(path) == (shown if kind == "blob" else None), (n, path)
                if kind == "blob":
                    assert kb.read_bytes(path) == git(root, "show", f"HEAD:{path}").encode()
                else:
                    with pytest.raises(NotFound):
                        kb.read_bytes(path)
    fsck(root)


COMMIT_ONE = """
    import sys
    from kbmem.store.repository import KnowledgeBase
    KnowledgeBase(sys.argv[1]).commit_files({sys.argv[2]: b"v2"}, "Two")
"""


def test_a_block_of_reads_sees_one_head_and_a_write_in_it_moves_it(
    empty_kb: KnowledgeBase,
) -> None:
    """Inside ``one_head`` HEAD is read once: a commit by another process is not seen until
    the block ends, while a write of this one, in the block, is seen at once."""
    root = empty_kb.root
    empty_kb.commit_files({NOTE: b"v1\n"}, "One")
    first = head(root)
    with empty_kb.one_head():
        assert empty_kb.head() == first
        other = _spawn(COMMIT_ONE, str(root), NOTE)
        _out, err = other.communicate(timeout=120)
        assert other.returncode == 0, err
        second = head(root)
        assert second != first and empty_kb.head() == first  # as first read in the block
        with empty_kb.one_head():  # a nested block is the same block
            assert empty_kb.head() == first
        empty_kb.commit_files({NOTE: b"v3\n"}, "Three")
        third = head(root)
        assert git(root, "rev-parse", "HEAD~1").strip() == second  # the write read git's HEAD
        assert empty_kb.head() == third
    assert empty_kb.head() == third == head(root)


def test_names_that_look_like_patterns_touch_only_themselves(empty_kb: KnowledgeBase) -> None:
    """A path with '*' or a leading ':' is a file name to kbmem, never a git pathspec that
    could reach the user's other staged files."""
    root = empty_kb.root
    (root / "notes").mkdir()
    (root / "notes" / "mine.md").write_text("the user's staged note\n")
    git(root, "add", "notes/mine.md")
    staged = git(root, "diff", "--cached", "--name-status")
    empty_kb.commit_files({"notes/*.md": b"star\n", ":(glob)x.md": b"magic\n"}, "Odd names")
    assert git(root, "diff", "--cached", "--name-status") == staged
    assert git(root, "show", "HEAD:notes/*.md") == "star\n"
    assert git(root, "show", "HEAD::(glob)x.md") == "magic\n"
    assert "notes/*.md" not in status(root) and "glob" not in status(root)


def test_a_page_listing_is_the_commits_own_and_the_callers_copy(empty_kb: KnowledgeBase) -> None:
    from kbmem.store.pagestore import PageStore

    store = PageStore(empty_kb, "default")
    assert store.files() == {}
    first = empty_kb.commit_files({NOTE: b"# A\n"}, "Add a")
    listed = store.files()
    assert set(listed) == {"notes/a.md"}
    listed.clear()  # what a caller does with its listing is its own affair
    assert set(store.files()) == {"notes/a.md"}
    empty_kb.commit_files({"tenants/default/notes/b.md": b"# B\n"}, "Add b")
    # A new commit is listed anew; an older one still lists what it held.
    assert set(store.files()) == {"notes/a.md", "notes/b.md"}
    assert set(store.files(first)) == {"notes/a.md"}
    with pytest.raises(NotFound):
        store.files("no-such-revision")
