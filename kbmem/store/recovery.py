"""The write journal: repairs the work tree after a write that died before its commit.

Before a write touches the work tree, ``.kbmem/pending-write`` names the paths about to
change; it is removed once HEAD has moved (or the write was undone). A journal found by the
next writer, under the write lock, means its writer died in between: its paths are put back
as HEAD has them (deleted when HEAD has none), and the temp files it left are removed.
"""

from __future__ import annotations

import logging
from contextlib import suppress
from pathlib import Path
from typing import Protocol

from kbmem.errors import ValidationError
from kbmem.store.files import atomic_write, remove_temp_files, symlink_in

log = logging.getLogger("kbmem")

JOURNAL_NAME = "pending-write"


class _Repository(Protocol):
    """What recovery needs of the knowledge base."""

    root: Path

    def head(self) -> str | None: ...
    def blob_id(self, relpath: str, rev: str = "HEAD") -> str | None: ...
    def read_blob(self, blob_id: str) -> bytes: ...
    def _check_relpath(self, relpath: str) -> None: ...
    def _refresh_user_index(self, paths: list[str], rev: str = "HEAD") -> None: ...


class WriteJournal:
    """The journal file of one knowledge base (``state_dir/pending-write``)."""

    def __init__(self, state_dir: Path):
        self.path = state_dir / JOURNAL_NAME

    def begin(self, paths: list[str]) -> None:
        """Name the paths a write is about to change (before it changes any)."""
        atomic_write(self.path, "\n".join(paths).encode(), durable=False)

    def end(self) -> None:
        """The write committed (or was undone): nothing is left to repair."""
        self.path.unlink()

    def recover(self, kb: _Repository) -> None:
        """Undo the work-tree half of a write that died before its commit: the journal's
        paths are put back as HEAD has them (deleted when HEAD has none)."""
        try:
            paths = [p for p in self.path.read_text().split("\n") if p]
        except FileNotFoundError:
            return
        head = kb.head()
        for relpath in list(paths):
            try:
                kb._check_relpath(relpath)
                if symlink_in(kb.root, relpath):  # never write outside the knowledge base
                    raise ValidationError("a path through a symbolic link", "path")
            except ValidationError:
                log.warning("ignoring %r in %s", relpath, self.path)
                paths.remove(relpath)
                continue
            remove_temp_files(kb.root / relpath)
            blob = kb.blob_id(relpath, head) if head else None
            if blob is None:
                with suppress(FileNotFoundError):
                    (kb.root / relpath).unlink()
            else:
                atomic_write(kb.root / relpath, kb.read_blob(blob))
        if head and paths:
            kb._refresh_user_index(paths)
        self.path.unlink()
        log.warning("recovered from an interrupted write of %d path(s)", len(paths))
