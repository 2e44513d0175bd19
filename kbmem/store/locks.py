"""File locks: the one helper every kbmem lock goes through.

An exclusive ``flock`` on a lock file: it dies with its holder (a killed process never leaves
a lock held), works across processes and needs no cleanup. Used for the knowledge base's
single writer (with a turnstile so that two busy writers take turns), a chat's journal (held
while the chat is open, the lock file removed by its holder when done with) and an index's
sync (waited for with a timeout that a cancel event can cut short).
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from kbmem.errors import LockTimeout, StorageError

# How often a waiting locker tries again: short, since writes take milliseconds.
POLL_INTERVAL_S = 0.005
# A lock file replaced this many times in a row while we took it is given up on (see acquire).
REOPEN_ATTEMPTS = 100
LOCK_FILE_MODE = 0o644


def try_flock(fd: int) -> bool:
    """Lock ``fd`` exclusively if nobody holds it; False when someone does."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES):
            raise
        return False


def flock_until(fd: int, deadline: float, cancel: threading.Event | None = None) -> bool:
    """Lock ``fd`` exclusively, polling until ``deadline`` (``time.monotonic()``) or until
    ``cancel`` is set; False when it could not."""
    while not try_flock(fd):
        if time.monotonic() >= deadline or (cancel is not None and cancel.is_set()):
            return False
        time.sleep(POLL_INTERVAL_S)
    return True


@dataclass
class HeldLock:
    """An exclusive lock this process holds on the lock file ``path``."""

    path: Path
    fd: int

    def release(self, remove: bool = False) -> None:
        """Let go of the lock (once; again is a no-op). ``remove`` deletes the lock file
        first, while still holding it, so that nobody is left holding a lock on a file that
        is gone (see :func:`acquire`'s ``removable``)."""
        if self.fd < 0:
            return
        if remove:
            with suppress(FileNotFoundError):
                self.path.unlink()
        with suppress(OSError):
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = -1


def acquire(
    path: Path,
    timeout: float = 0.0,
    cancel: threading.Event | None = None,
    removable: bool = False,
) -> HeldLock | None:
    """Lock the file ``path`` (created if missing), waiting up to ``timeout`` seconds (0: one
    try) or until ``cancel`` is set; None when it was not taken.

    ``removable``: the lock's holders delete the file when done with it, so a lock won on a
    file that was unlinked meanwhile is worthless; then the path is opened again."""
    deadline = time.monotonic() + timeout
    for _attempt in range(REOPEN_ATTEMPTS):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, LOCK_FILE_MODE)
        try:
            taken = flock_until(fd, deadline, cancel)
        except BaseException:
            os.close(fd)
            raise
        if not taken:
            os.close(fd)
            return None
        held = HeldLock(path, fd)
        if not removable or _still_at(path, fd):
            return held
        held.release()
    raise StorageError(f"cannot lock {path}: it keeps being replaced")


def _still_at(path: Path, fd: int) -> bool:
    """Whether the open file ``fd`` is still the file at ``path``."""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


@contextmanager
def file_lock(path: Path, timeout: float, cancel: threading.Event | None = None) -> Iterator[bool]:
    """Hold the lock file ``path`` for the ``with`` block, waiting as :func:`acquire` does;
    yields whether it was taken (the block runs either way, and decides what to do)."""
    held = acquire(path, timeout, cancel)
    try:
        yield held is not None
    finally:
        if held is not None:
            held.release()


def lock_timeout(root: Path, timeout: float) -> LockTimeout:
    """The error of a writer that waited ``timeout`` seconds for the lock of ``root``, the
    wait written as set (3 s, 0.5 s: never rounded to 0)."""
    return LockTimeout(
        f"another kbmem process has held {root} for over {timeout:g} s; "
        "try again when it has finished"
    )
