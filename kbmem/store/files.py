"""Files written whole: a temp file beside the target, flushed, then moved over it.

Readers see the old file or the new one, never half of one. A writer killed on the way
leaves its temp files (``.<name>.kbmem-<8 hex>.tmp``) until the next writer removes them;
git is told never to show them (``.git/info/exclude``), and kbmem removes no other file.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import stat
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import suppress
from pathlib import Path

log = logging.getLogger("kbmem")

TEMP_FILE = re.compile(r"\.(?P<target>.+)\.kbmem-[0-9a-f]{8}\.tmp")
TEMP_EXCLUDE = ".*.kbmem-????????.tmp"


def _temp_name(name: str) -> str:
    """The name of a temp file that will replace the file ``name`` (see TEMP_FILE)."""
    return f".{name}.kbmem-{secrets.token_hex(4)}.tmp"


def remove_temp_files(path: Path) -> None:
    """Delete the temp files that :func:`atomic_write` of ``path`` may have left behind when
    its process was killed: only kbmem's own (see TEMP_FILE), never a file of the user's
    that looks alike (``.notes.md.backup.tmp``)."""
    with suppress(FileNotFoundError, NotADirectoryError):
        for entry in os.scandir(path.parent):
            found = TEMP_FILE.fullmatch(entry.name)
            if found and found["target"] == path.name:
                with suppress(FileNotFoundError):
                    os.unlink(entry.path)


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def temp_beside(path: Path, data: bytes, mode: int | None = None) -> tuple[int, str]:
    """A temp file next to ``path`` holding ``data`` with ``mode``, else the mode ``path``
    has (or a new file's): ``(open descriptor, temp path)``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)  # keep an executable bit, for one
        except FileNotFoundError:
            mode = 0o666 & ~_UMASK  # what open() would have given a new file
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    while True:
        tmp = str(path.parent / _temp_name(path.name))
        try:
            fd = os.open(tmp, flags, 0o600)
            break
        except FileExistsError:
            continue
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return fd, tmp


def atomic_write(path: Path, data: bytes, durable: bool = True, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half
    (``durable`` also flushes it to disk before it replaces the old one; ``mode``: the new
    file's, else the old one's)."""
    fd, tmp = temp_beside(path, data, mode)
    try:
        if durable:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class StagedFiles:
    """A commit's files written beside their targets and flushed to disk in parallel; then
    each moved into place (or all thrown away). Deletions happen when they are moved."""

    def __init__(self, root: Path, writes: Mapping[str, bytes | None], pool: ThreadPoolExecutor):
        self._temps: list[tuple[str, Path]] = []
        self._deletes: list[Path] = []
        self._flushes: list[Future[None]] = []
        self._fds: list[int] = []
        try:
            for relpath, data in writes.items():
                path = root / relpath
                if data is None:
                    self._deletes.append(path)
                    continue
                fd, tmp = temp_beside(path, data)
                self._fds.append(fd)
                self._temps.append((tmp, path))
                self._flushes.append(pool.submit(os.fsync, fd))
        except BaseException:
            self.discard()
            raise

    def _close(self) -> None:
        wait(self._flushes)
        fds, self._fds = self._fds, []  # each descriptor is closed once
        for fd in fds:
            with suppress(OSError):
                os.close(fd)

    def discard(self) -> None:
        self._close()
        for tmp, _path in self._temps:
            with suppress(FileNotFoundError):
                os.unlink(tmp)

    def finish(self) -> None:
        try:
            for flush in self._flushes:
                flush.result()
        except BaseException:
            self.discard()
            raise
        self._close()
        for tmp, path in self._temps:
            os.replace(tmp, path)
        for path in self._deletes:
            with suppress(FileNotFoundError):
                path.unlink()


def symlink_in(root: Path, relpath: str) -> str | None:
    """The first part of ``relpath`` (a folder, or the file itself) that is a symbolic link
    in the work tree at ``root``, or None: kbmem reads and writes nothing through one."""
    parts = relpath.split("/")
    for depth in range(1, len(parts) + 1):
        prefix = "/".join(parts[:depth])
        try:
            if stat.S_ISLNK(os.lstat(root / prefix).st_mode):
                return prefix
        except (FileNotFoundError, NotADirectoryError):
            return None
    return None


def exclude_temp_files(git_dir: Path) -> None:
    """Make git ignore kbmem's temp files (``info/exclude`` of ``git_dir``, the repository's
    own list, never shared by a push): a writer killed mid-write leaves them until the next
    write, and ``git status`` must not show them meanwhile. The user's lines are kept."""
    exclude = git_dir / "info" / "exclude"
    try:
        current = exclude.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        current = ""
    except OSError as exc:
        log.debug("cannot read %s: %s", exclude, exc)
        return
    if TEMP_EXCLUDE in current.splitlines():
        return
    lines = "" if not current or current.endswith("\n") else "\n"
    lines += f"# kbmem: temp files of a write in progress, or cut short\n{TEMP_EXCLUDE}\n"
    try:
        exclude.parent.mkdir(exist_ok=True)
        with exclude.open("a", encoding="utf-8") as handle:
            handle.write(lines)
    except OSError as exc:  # a repository kbmem may only read
        log.debug("cannot write %s: %s", exclude, exc)
