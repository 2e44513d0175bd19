"""HEAD and the user's git index moved together, under git's own lock of that index.

A user's ``git commit`` reads HEAD, then the index, then takes ``index.lock`` and writes its
tree from the index it read; its move of HEAD is a compare-and-swap from the HEAD it read. So
whenever HEAD shows kbmem's commit, the index must already hold kbmem's files, or a commit by
hand made in between builds on kbmem's commit a tree without them (the soak benchmark lost
sessions that way). :func:`swap_head` therefore:

1. takes ``index.lock`` the way git does (create-if-absent), so that no git command writes
   the index meanwhile and no ``git commit`` can begin (git refuses to run while the lock
   exists; one that began earlier may still move HEAD, which the compare-and-swap catches);
2. stages the new index in a copy (``GIT_INDEX_FILE``, ``git reset`` of kbmem's paths) while
   ``git update-ref --stdin`` locks HEAD and checks that it still is the parent;
3. puts the new index in place, then lets the ref transaction commit: a ``git commit`` that
   read the old HEAD fails its compare-and-swap, one that reads the new HEAD reads the new
   index;
4. lets go of ``index.lock``.

What remains is git's own: ``git commit`` reads the index before it takes the lock, so one
that read it just before kbmem's swap and takes the lock just after writes its stale copy
back: its own commit then fails, HEAD having moved, but the next commit by hand is built from
an index without kbmem's files. The window is the few milliseconds between git's read and its
lock, spanning kbmem's whole swap; a stress loop of thousands of commits by hand hit it once.

The lock file is a second name (a hard link) of a file kbmem made, ``index.kbmem-held``, whose
presence is the journal: a writer killed while holding the lock leaves both names, and the
next writer (under kbmem's write lock, so the dead writer is the only one that made it)
removes ``index.lock`` only when it is still that very file, never a lock a git command took
since. On a filesystem that has no hard links, the lock is created the way git creates it
(``O_CREAT | O_EXCL``) and holds the journal's random token instead: it is kbmem's when it
says that token, which no index git writes into its lock does. A writer killed between
creating that lock and writing the token leaves it empty, not known as kbmem's: the next write
then waits and says to remove it, as after a crashed git command.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from kbmem.errors import LockTimeout, StorageError

GIT_INDEX_LOCK = "index.lock"
HELD_NAME = "index.kbmem-held"  # our name of the index.lock we hold
NEXT_NAME = "index.kbmem-next"  # the new index, staged before it replaces the user's
RESET_PATHS = ["--literal-pathspecs", "reset", "-q"]
PATHS_ON_STDIN = ["--pathspec-from-file=-", "--pathspec-file-nul"]
# A user's git command holds the index lock for milliseconds; it is polled this often.
POLL_S = 0.01
# What link(2) fails with where the filesystem has no hard links (FAT, some network and FUSE
# filesystems): the lock is then made by exclusive create, as git makes it.
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.ENOSYS}


class LostSwap(Exception):
    """HEAD was no longer the commit kbmem built on: someone else's commit won."""


@contextmanager
def index_lock(git_dir: Path, wait_s: float) -> Iterator[None]:
    """Hold git's lock of the user's index (see the module's contract); LockTimeout when a
    git command held it for over ``wait_s`` seconds. While it is held no git command writes
    the index and no ``git commit`` starts."""
    held = _take(git_dir, wait_s)
    try:
        yield
    finally:
        _release(git_dir, held)


def swap_head(
    root: Path,
    git_dir: Path,
    git: str,
    new: str,
    old: str | None,
    paths: list[str],
    reflog: str,
    head: Callable[[], str | None],
) -> None:
    """Move HEAD from ``old`` to ``new`` and the user's index entries for ``paths`` with it,
    as one step for any git command that honours ``index.lock``; call it holding
    :func:`index_lock`. LostSwap, with nothing changed, when HEAD is no longer ``old``."""
    ref = subprocess.Popen(
        [git, "update-ref", "-m", reflog, "--stdin"],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert ref.stdin is not None and ref.stdout is not None
    ref.stdin.write(f"start\nupdate HEAD {new} {old or '0' * 40}\nprepare\n".encode())
    ref.stdin.flush()
    try:
        staged = _stage(root, git_dir, git, new, paths) if paths else None
        prepared = [ref.stdout.readline() for _ in range(2)]  # HEAD locked, still old
        if prepared != [b"start: ok\n", b"prepare: ok\n"]:
            _out, err = ref.communicate()
            if head() != old:
                raise LostSwap()
            raise StorageError(
                f"git failed while moving HEAD: {err.decode(errors='replace').strip()}"
            )
        if staged is not None:
            _publish(staged, git_dir)
        _out, err = ref.communicate(b"commit\n")
    finally:
        if ref.returncode is None:  # an error above: the input ends, the transaction aborts
            ref.communicate()
    if ref.returncode != 0:
        raise StorageError(f"git failed while moving HEAD: {err.decode(errors='replace').strip()}")


def recover(git_dir: Path) -> bool:
    """Remove the ``index.lock`` a killed kbmem writer held, if it is still that writer's
    (and the staged index it left). Call only under kbmem's write lock. True if it did."""
    held = git_dir / HELD_NAME
    (git_dir / NEXT_NAME).unlink(missing_ok=True)
    if not held.exists():
        return False
    _release(git_dir, held)
    return True


def _take(git_dir: Path, wait_s: float) -> Path:
    """Hold ``index.lock``: our own file, then a second name for it made atomically (the
    link fails while anyone holds the lock), as git's create-if-absent would."""
    held = git_dir / HELD_NAME
    held.write_text(f"kbmem {secrets.token_hex(16)}\n")
    deadline = time.monotonic() + wait_s
    while True:
        try:
            _claim(held, git_dir / GIT_INDEX_LOCK)
            return held
        except FileExistsError:
            if time.monotonic() >= deadline:
                held.unlink()
                raise LockTimeout(
                    f"a git command has held {git_dir / GIT_INDEX_LOCK} for over {wait_s:g} s; "
                    "try again when it is done (if no git command is running, the lock was "
                    "left by one that crashed: remove it)"
                ) from None
            time.sleep(POLL_S)


def _claim(held: Path, lock: Path) -> None:
    """Create ``lock`` if absent, as kbmem's: a hard link of ``held``, or where the filesystem
    has none, a new file saying ``held``'s token. FileExistsError while anyone holds it."""
    try:
        os.link(held, lock)
        return
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in _NO_LINKS:
            raise
    token = held.read_bytes()
    fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        os.write(fd, token)
    finally:
        os.close(fd)


def _ours(lock: Path, held: Path) -> bool:
    """Whether ``lock`` is the one kbmem took with the journal ``held``."""
    if os.path.samefile(lock, held):
        return True
    token = held.read_bytes()
    return bool(token) and lock.read_bytes() == token


def _release(git_dir: Path, held: Path) -> None:
    """Let go of ``index.lock`` if it is still ours, then of our name for it."""
    lock = git_dir / GIT_INDEX_LOCK
    with suppress(FileNotFoundError):
        if _ours(lock, held):
            lock.unlink()
    held.unlink(missing_ok=True)
    (git_dir / NEXT_NAME).unlink(missing_ok=True)


def _publish(staged: Path, git_dir: Path) -> None:
    """The staged index becomes the user's (HEAD is locked by git, still the old commit)."""
    os.replace(staged, git_dir / "index")


def _stage(root: Path, git_dir: Path, git: str, rev: str, paths: list[str]) -> Path:
    """A copy of the user's index with ``paths`` as ``rev`` has them."""
    staged = git_dir / NEXT_NAME
    try:
        shutil.copyfile(git_dir / "index", staged)
    except FileNotFoundError:
        staged.unlink(missing_ok=True)  # no index yet: git makes one
    if not paths:
        return staged
    # Paths as literal names ('*' or ':' in a name is no pattern), passed on stdin.
    done = subprocess.run(
        [git, *RESET_PATHS, rev, *PATHS_ON_STDIN],
        cwd=root,
        input="\0".join(paths).encode(),
        env={**os.environ, "GIT_INDEX_FILE": str(staged)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    if done.returncode != 0:
        raise StorageError(f"git reset failed: {done.stderr.decode(errors='replace').strip()}")
    return staged
