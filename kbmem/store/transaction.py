"""The write transaction: one writer at a time, a commit of exactly kbmem's paths.

``commit_files`` takes the write lock, repairs a write that died before it (see
:mod:`kbmem.store.recovery`), refuses a path through a symbolic link (it could lead outside
the knowledge base) and a user's uncommitted work it would overwrite, writes the files (temp
file and rename, flushed in parallel) while the commit's objects are built in-process
(:mod:`kbmem.store.objects`), then moves HEAD by one compare-and-swap (``git update-ref``) and
the user's index with it under git's own index lock, so that ``git status`` stays clean and a
commit by hand cannot drop kbmem's files (:mod:`kbmem.store.userindex`). A crash leaves
the old commit or the new one. A swap lost to a user's commit is built again on theirs (a
bounded number of times, then ConflictError); loose objects are packed once they pile up.
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path

import git

from kbmem.config import Settings
from kbmem.errors import ConflictError, StorageError, UncommittedChanges, ValidationError
from kbmem.store import userindex
from kbmem.store.files import StagedFiles, atomic_write, symlink_in
from kbmem.store.locks import HeldLock, acquire, lock_timeout
from kbmem.store.objects import ObjectStore, blob_id_of, git_date
from kbmem.store.recovery import WriteJournal

log = logging.getLogger("kbmem")

STATE_DIR = ".kbmem"
GIT = git.Git.GIT_PYTHON_GIT_EXECUTABLE or "git"
RESET_PATHS = [GIT, "--literal-pathspecs", "reset", "-q"]
# Threads that flush a commit's files to disk at once.
FLUSH_THREADS = 8
# A commit that loses the compare-and-swap of HEAD to someone else's is built again on the new
# HEAD, this many times in all, before kbmem gives up with a ConflictError.
CAS_ATTEMPTS = 5
# A user's git command holding the index lock is waited for this many times this long (when
# kbmem puts its paths back in that index after a failed write).
INDEX_LOCK_ATTEMPTS = 100
INDEX_LOCK_WAIT_S = 0.05
# kbmem's swap of HEAD waits at least this long for a git command holding the index lock.
INDEX_LOCK_MIN_WAIT_S = 5.0


class WriteTransactions:
    """The writing half of :class:`~kbmem.store.repository.KnowledgeBase` (its base class):
    the write lock and ``commit_files``. The reads it uses are the knowledge base's."""

    root: Path
    git_dir: Path  # where the user's index lives
    settings: Settings
    state_dir: Path
    objects: ObjectStore

    def head(self) -> str | None:
        raise NotImplementedError

    def blob_id(self, relpath: str, rev: str = "HEAD") -> str | None:
        raise NotImplementedError

    def read_blob(self, blob_id: str) -> bytes:
        raise NotImplementedError

    def _object_at(self, relpath: str, commit: str) -> tuple[str, str] | None:
        raise NotImplementedError

    def _init_writes(self) -> None:
        self._lock_depth = 0
        self._held: HeldLock | None = None
        self._thread_lock = threading.RLock()
        self._flush_pool: ThreadPoolExecutor | None = None
        self._write_journal = WriteJournal(self.state_dir)
        # Run as a write begins, before its lock is taken and never inside a write of this
        # process (whose writer has read what it writes from): a sync in the background joins
        # a remote known to be ahead first (kbmem.sync.background). They must not raise.
        self.before_write: list[Callable[[], None]] = []

    # -- the write lock ---------------------------------------------------------------------

    def _take_write_lock(self, timeout: float) -> HeldLock:
        """The write lock, held. Writers queue at a turnstile (a second lock held only while
        waiting for the first): a writer that releases the lock and wants it again must wait
        behind the one already waiting, so two busy writers take turns instead of one
        starving the other."""
        deadline = time.monotonic() + timeout
        turnstile = acquire(self.state_dir / "write.queue", timeout)
        if turnstile is None:
            raise lock_timeout(self.root, timeout)
        try:
            held = acquire(self.state_dir / "write.lock", max(0.0, deadline - time.monotonic()))
        finally:
            turnstile.release()
        if held is None:
            raise lock_timeout(self.root, timeout)
        return held

    @contextmanager
    def write_lock(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the knowledge base's single-writer lock (re-entrant within a process)."""
        timeout = float(self.settings.data["git"]["lock_timeout_s"] if timeout is None else timeout)
        if self._lock_depth == 0:
            for hook in list(self.before_write):
                hook()
        with self._thread_lock:
            if self._lock_depth == 0:
                held = self._take_write_lock(timeout)
                try:
                    self._recover()
                except BaseException:
                    held.release()
                    raise
                self._held = held
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
                if self._lock_depth == 0 and self._held is not None:
                    self._held.release()
                    self._held = None

    # -- the transaction --------------------------------------------------------------------

    def commit_files(
        self,
        writes: Mapping[str, bytes | None],
        message: str,
        trailers: Mapping[str, str] | None = None,
        date: str | None = None,
    ) -> str | None:
        """Write ``writes`` (``None`` deletes) into the work tree and commit exactly those
        paths. Returns the new commit id, or None when nothing changed (no empty commits)."""
        for relpath in writes:
            self._check_relpath(relpath)
        when = git_date(date)
        with self.write_lock():
            self._refuse_symlinks(writes)
            self._refuse_uncommitted(writes)
            paths = sorted(writes)
            # If we die before HEAD moves, the next writer puts the paths back (see _recover).
            self._write_journal.begin(paths)
            try:
                # Files reach the disk (in parallel) while the commit's objects are built.
                staged = StagedFiles(self.root, writes, self._flusher())
                try:
                    commit = self._build_commit(writes, message, trailers or {}, when)
                except BaseException:
                    staged.discard()
                    raise
                staged.finish()
                sha = self._move_head(commit, writes, message, trailers or {}, when)
            except BaseException:
                # No commit: put the work tree back as HEAD has it (the journal stays if
                # even that fails, for the next writer to finish).
                with suppress(Exception):
                    self._recover()
                raise
            self._write_journal.end()
            if sha is not None:
                _pack_loose_objects(self.root, self.objects)
            return sha

    def advance_head(
        self, old: str | None, new: str, files: Mapping[str, bytes | None], reflog: str
    ) -> bool:
        """Move HEAD from ``old`` to the existing commit ``new`` (a sync's fast-forward or
        merge), the work tree following with ``files`` (the paths that differ, ``None``
        deleted). False, with nothing done, when HEAD is no longer ``old``. The same
        discipline as :meth:`commit_files`: under the write lock, refusing symlinks and the
        user's uncommitted changes, journaled so that a crash midway is repaired."""
        with self.write_lock():
            if self.head() != old:
                return False
            self._refuse_symlinks(files)
            self._refuse_uncommitted(files)
            paths = sorted(files)
            self._write_journal.begin(paths)
            try:
                with self._index_lock():
                    userindex.swap_head(
                        self.root, self.git_dir, GIT, new, old, paths, f"kbmem: {reflog}", self.head
                    )
            except userindex.LostSwap:
                self._write_journal.end()
                return False
            _write_work_tree(self.root, files)
            self._write_journal.end()
        return True

    def _move_head(
        self,
        commit: tuple[str, str | None] | None,
        writes: Mapping[str, bytes | None],
        message: str,
        trailers: Mapping[str, str],
        when: str,
    ) -> str | None:
        """Swap HEAD to ``commit``; when someone else's commit won the race, build it again on
        their HEAD (up to ``CAS_ATTEMPTS`` in all), unless theirs changed one of our paths:
        what kbmem writes was made from the old file, so that is a ConflictError at once.
        A commit built again is built holding the user's index lock, so that no commit by
        hand can start meanwhile (one already started, or plumbing, still can)."""
        paths = sorted(writes)
        base = commit[1] if commit is not None else None  # the HEAD our files were made from
        attempt = 1
        while commit is not None:
            with self._index_lock():
                if attempt > 1:
                    self._refuse_raced(base, paths)
                    commit = self._build_commit(writes, message, trailers, when)
                    if commit is None:
                        return None
                try:
                    return self._swap_head(commit, paths, message)
                except userindex.LostSwap:
                    pass
            if attempt >= CAS_ATTEMPTS:
                self._refuse_raced(base, paths)
                raise ConflictError(
                    f"HEAD kept moving while kbmem committed ({attempt} attempts): "
                    "other commits are landing continuously; try again when they stop"
                )
            attempt += 1
        return None

    def _refuse_raced(self, parent: str | None, paths: list[str]) -> None:
        """ConflictError when the commits that moved HEAD past ``parent`` changed a path of
        ours."""
        head = self.head()
        if head is None:
            return
        changed = [
            p
            for p in paths
            if (self._object_at(p, parent) if parent else None) != self._object_at(p, head)
        ]
        if changed:
            raise ConflictError(
                f"{', '.join(changed)}: committed by someone else while kbmem was writing it; "
                "nothing of theirs was overwritten, try again to write on top of it"
            )

    def _refuse_symlinks(self, writes: Mapping[str, bytes | None]) -> None:
        """ValidationError when a path kbmem would write goes through a symbolic link, in the
        work tree or in HEAD: it could lead outside the knowledge base."""
        head = self.head()
        for relpath in writes:
            link = symlink_in(self.root, relpath) or (
                self.objects.symlink_in(head, relpath) if head else None
            )
            if link is not None:
                raise ValidationError(
                    f"{link} is a symbolic link; kbmem reads and writes nothing through one "
                    f"(writing {relpath}): replace it with a folder or a file",
                    "path",
                )

    def _refuse_uncommitted(self, writes: Mapping[str, bytes | None]) -> None:
        """Raise UncommittedChanges when a work-tree file kbmem is about to replace or delete
        holds something HEAD does not: a user's uncommitted edit, or a file of theirs that was
        never committed. A file that already holds what kbmem writes is no loss."""
        head = self.head()
        suspects: list[tuple[str, str | None]] = []
        for relpath, data in writes.items():
            try:
                current = (self.root / relpath).read_bytes()
            except (FileNotFoundError, NotADirectoryError):
                continue  # nothing there to lose
            except IsADirectoryError:
                suspects.append((relpath, None))
                continue
            if current == data:
                continue
            found = self._object_at(relpath, head) if head else None  # head: no resolve
            committed = found[0] if found and found[1] == "blob" else None
            if committed is None or blob_id_of(current) != committed:
                suspects.append((relpath, committed))
        # Same bytes as HEAD is the common case and needs no git; a file that differs may
        # still be clean once git's checkout filters (core.autocrlf, ...) are applied.
        suspects = _still_modified(self.root, suspects)
        if suspects:
            names = ", ".join(sorted(p for p, _blob in suspects))
            raise UncommittedChanges(
                f"{names}: changed in the work tree but not committed, and kbmem would "
                "overwrite it; commit it (git commit) or set it aside (git stash), then try again"
            )

    def _flusher(self) -> ThreadPoolExecutor:
        if self._flush_pool is None:
            self._flush_pool = ThreadPoolExecutor(
                max_workers=FLUSH_THREADS, thread_name_prefix="kbmem-fsync"
            )
        return self._flush_pool

    def _check_relpath(self, relpath: str) -> None:
        parts = relpath.split("/")
        if (
            not relpath
            or relpath.startswith("/")
            or any(p in ("", ".", "..") for p in parts)
            or parts[0] in (".git", STATE_DIR)
            or "\x00" in relpath
            or "\n" in relpath
        ):
            raise ValidationError(f"{relpath!r} is not a path kbmem may write", "path")

    def _recover(self) -> None:
        """Repair the work tree after a write that died before its commit (see
        :class:`~kbmem.store.recovery.WriteJournal`), first letting go of the user's index
        lock if it died holding it."""
        if userindex.recover(self.git_dir):
            log.warning("removed the git index lock an interrupted kbmem write held")
        self._write_journal.recover(self)

    # -- the commit -------------------------------------------------------------------------

    def _build_commit(
        self,
        writes: Mapping[str, bytes | None],
        message: str,
        trailers: Mapping[str, str],
        when: str,
    ) -> tuple[str, str | None] | None:
        """Write the objects of a commit of ``writes`` on top of HEAD; ``(commit, parent)``,
        or None when the tree would not change."""
        parent = self.head()
        sha = self.objects.build_commit(parent, writes, message, trailers, when)
        return None if sha is None else (sha, parent)

    def _swap_head(self, commit: tuple[str, str | None], paths: list[str], message: str) -> str:
        """Compare-and-swap of HEAD to ``commit`` (its parent expected), the user's index
        brought to it in the same step (see :mod:`kbmem.store.userindex`); call it holding
        :meth:`_index_lock`."""
        sha, parent = commit
        reflog = f"kbmem: {message.splitlines()[0]}"
        userindex.swap_head(self.root, self.git_dir, GIT, sha, parent, paths, reflog, self.head)
        return sha

    def _index_lock(self) -> AbstractContextManager[None]:
        # The user's git holds its index for milliseconds; kbmem waits as long as for its
        # own write lock, and at least a few seconds even when told not to wait for writers.
        wait = max(float(self.settings.data["git"]["lock_timeout_s"]), INDEX_LOCK_MIN_WAIT_S)
        return userindex.index_lock(self.git_dir, wait)

    def _refresh_user_index(self, paths: list[str], rev: str = "HEAD") -> None:
        """Make the user's index agree with ``rev`` (the new HEAD) for our paths, so that ``git
        status`` stays clean and a later ``git commit`` by hand cannot undo our change."""
        _reset_index(self.root, paths, rev)


def _write_work_tree(root: Path, files: Mapping[str, bytes | None]) -> None:
    """Make the work tree's ``files`` what HEAD now holds (``None``: removed)."""
    for relpath, data in files.items():
        target = root / relpath
        if data is None:
            target.unlink(missing_ok=True)
            _prune_empty(root, target.parent)
        else:
            atomic_write(target, data, durable=False)


def _prune_empty(root: Path, folder: Path) -> None:
    """Remove ``folder`` and its parents up to ``root`` while they are empty."""
    while folder != root and folder.is_dir():
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _still_modified(
    root: Path, suspects: list[tuple[str, str | None]]
) -> list[tuple[str, str | None]]:
    """The ``suspects`` (``(path, committed blob id or None)``) that ``git diff`` too
    finds changed; untracked ones (no blob) always stay."""
    tracked = [p for p, blob in suspects if blob is not None]
    if not tracked:
        return suspects
    diff = [GIT, "--literal-pathspecs", "diff", "--no-ext-diff", "--name-only", "-z"]
    done = subprocess.run(
        [*diff, "HEAD", "--", *tracked],
        cwd=root,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    if done.returncode != 0:
        raise StorageError(f"git diff failed: {done.stderr.decode(errors='replace')}")
    modified = set(done.stdout.decode("utf-8", "surrogateescape").split("\0"))
    return [(p, blob) for p, blob in suspects if blob is None or p in modified]


def _pack_loose_objects(root: Path, objects: ObjectStore) -> None:
    """Pack kbmem's loose objects once they pile up, so that git's auto-gc (started by a
    user's commit) rarely has them to pack. A failure costs nothing but the packing."""
    if not objects.needs_packing():
        return
    done = subprocess.run(
        [GIT, "repack", "-d", "-q"],
        cwd=root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    if done.returncode != 0:
        log.warning("git repack failed: %s", done.stderr.decode(errors="replace").strip())


def _reset_index(root: Path, paths: list[str], rev: str) -> None:
    """``git reset`` of ``paths`` to ``rev``, waiting out a user's git command that holds
    the index lock a while."""
    for _attempt in range(INDEX_LOCK_ATTEMPTS):
        # Paths as literal names ('*' or ':' in a name is no pattern), passed on stdin.
        done = subprocess.run(
            [*RESET_PATHS, rev, "--pathspec-from-file=-", "--pathspec-file-nul"],
            cwd=root,
            input="\0".join(paths).encode(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        if done.returncode == 0:
            return
        err = done.stderr.decode(errors="replace").strip()
        if "index.lock" not in err:
            raise StorageError(f"git reset failed: {err}")
        time.sleep(INDEX_LOCK_WAIT_S)
    log.warning(
        "the git index stayed locked by another git command; 'git status' may show "
        "kbmem's last commit as staged changes until 'git reset -q HEAD -- %s'",
        " ".join(paths),
    )
