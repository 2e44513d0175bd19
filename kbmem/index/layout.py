"""A tenant's index folder: which generation is live, making a new one live, removing old ones,
and the lock that lets one process sync at a time.

Layout under ``.kbmem/index/<tenant>/``::

    CURRENT            name of the generation readers use (replaced atomically)
    gen-<id>/          one generation (kbmem.index.generation)
    sync.lock          one syncing process at a time

A sync builds a new generation beside the live one and swaps ``CURRENT`` at the end, so a
reader always sees a consistent index of some commit; a sync killed half-way leaves the old
generation serving and a stray folder that the next sync removes."""

from __future__ import annotations

import json
import os
import shutil
import threading
import uuid
from pathlib import Path
from typing import Any

from kbmem.errors import Cancelled
from kbmem.store.files import atomic_write
from kbmem.store.locks import file_lock


def stop_if_cancelled(cancel: threading.Event | None, tenant: str) -> None:
    """Raise Cancelled if ``cancel`` is set: a sync of ``tenant`` checks this between steps."""
    if cancel is not None and cancel.is_set():
        raise Cancelled(f"the index sync of tenant {tenant} was stopped")


def link(src: Path, dst: Path) -> None:
    """``dst`` as a hard link of ``src`` (a copy where links are not possible): generations
    share the files they do not change."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


class Layout:
    """The generations of one tenant's index folder and the name ``CURRENT`` gives the live one."""

    def __init__(self, path: Path, tenant: str):
        self.dir = path
        self.tenant = tenant
        self._current_seen: tuple[tuple[int, int, int], str | None] | None = None

    def current_name(self) -> str | None:
        """The generation ``CURRENT`` names. Read again only when the file is another one
        than last time, or changed (a swap writes a new file in its place, atomic_write): a
        search asks this for every hit it looks around, and a stat costs a fifth of a read."""
        path = self.dir / "CURRENT"
        try:
            stat = os.stat(path)
            seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
            if self._current_seen is not None and self._current_seen[0] == seen:
                return self._current_seen[1]
            name = path.read_text().strip() or None
        except FileNotFoundError:
            return None
        # Replaced between the stat and the read: the next call sees another file and reads
        # it again.
        self._current_seen = (seen, name)
        return name

    def lock(self, timeout: float, cancel: threading.Event | None = None) -> Any:
        """The sync lock of this folder: one syncing process at a time."""
        return file_lock(self.dir / "sync.lock", timeout, cancel)

    def new_dir(self, head: str | None) -> Path:
        """A fresh, empty generation folder for a build of ``head``."""
        path = self.dir / f"gen-{(head or 'empty')[:12]}-{uuid.uuid4().hex[:8]}"
        path.mkdir()
        return path

    def publish(
        self, path: Path, meta: dict[str, Any], cancel: threading.Event | None = None
    ) -> None:
        """Make the generation at ``path`` the live one, unless ``cancel`` was set while it
        was built (then Cancelled; the unpublished directory is collected later)."""
        stop_if_cancelled(cancel, self.tenant)
        atomic_write(path / "meta.json", json.dumps(meta, indent=1).encode())
        atomic_write(self.dir / "CURRENT", path.name.encode())

    def collect_garbage(self) -> None:
        """Remove generations other than the current and the one before it (a reader in
        another process may still be using that one), and any stray partial build."""
        current = self.current_name()
        gens = sorted(
            (p for p in self.dir.glob("gen-*") if p.is_dir()),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        keep = {current}
        for p in gens:
            if p.name != current and (p / "meta.json").exists():
                keep.add(p.name)
                break
        for p in gens:
            if p.name not in keep:
                shutil.rmtree(p, ignore_errors=True)
