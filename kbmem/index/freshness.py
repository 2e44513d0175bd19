"""How fresh a tenant's index is: the commit it reflects, how many of the tenant's commits since
are not in it yet, and how far a build that is catching up has got. Every search result set and
every briefing carries this, so that an answer from an index that is behind says so.

A build in progress is known across processes through ``progress.json`` in the tenant's index
folder (the commit it builds, intervals done and in all, and the building process): a server
whose index a CLI ``kbmem index`` is rebuilding reports that build too."""

from __future__ import annotations

import json
import os
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbmem.errors import KbmemError
from kbmem.store.files import atomic_write

PROGRESS_FILE = "progress.json"


class StillIndexing(KbmemError):
    """The tenant has no index yet and its first build did not finish in the time a request
    may wait: asking again later works."""

    exit_code = 5
    http_status = 503

    def __init__(self, message: str, status: IndexStatus):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class IndexStatus:
    """What one answer's index reflects (see the module's docstring)."""

    commit: str | None  # the commit the index was built from; None before the first build
    head: str | None  # the knowledge base's HEAD when asked
    pending_commits: int  # the tenant's commits after ``commit``, up to ``head``
    done: int | None = None  # intervals a build in progress has finished...
    total: int | None = None  # ...of this many (None: no build is running)
    built: bool = True  # False: there is no index to answer from yet

    @property
    def fresh(self) -> bool:
        return self.built and self.pending_commits == 0

    def as_dict(self) -> dict[str, Any]:
        """The JSON form: ``{commit, pendingCommits, indexing: {done, total} | null}``."""
        indexing = None
        if self.total is not None:
            indexing = {"done": self.done or 0, "total": self.total}
        return {
            "commit": self.commit,
            "pendingCommits": self.pending_commits,
            "indexing": indexing,
        }

    def _progress(self) -> str:
        if self.total is None:
            return ""
        return f"indexing {self.done or 0:,} of {self.total:,} intervals"

    def notice(self) -> str | None:
        """A sentence for a briefing's open questions when the index is behind, else None."""
        if not self.built:
            doing = self._progress() or "indexing has not started"
            return f"The index is still being built ({doing}); memory may be missing."
        if self.pending_commits == 0:
            return None
        plural = "commit" if self.pending_commits == 1 else "commits"
        doing = f" ({self._progress()})" if self._progress() else ""
        return (
            f"Index is {self.pending_commits} {plural} behind HEAD{doing}; "
            "newer memory may be missing."
        )

    def short(self) -> str:
        """A few words for a status bar: ``index ✓``, ``index 3 behind · 1,200/20,000``."""
        if not self.built:
            if self.total is None:
                return "index: none yet"
            return f"index: building {self.done or 0:,}/{self.total:,}"
        if self.pending_commits == 0:
            return "index: up to date"
        text = f"index: {self.pending_commits} behind"
        if self.total is not None:
            text += f" · {self.done or 0:,}/{self.total:,}"
        return text


def write_progress(index_dir: Path, target: str | None, done: int, total: int) -> None:
    """Note how far the build of ``target`` in this process has got."""
    body = {"commit": target, "done": done, "total": total, "pid": os.getpid()}
    with suppress(OSError):  # a progress note must never fail a build
        atomic_write(index_dir / PROGRESS_FILE, json.dumps(body).encode(), durable=False)


def clear_progress(index_dir: Path) -> None:
    with suppress(OSError):
        (index_dir / PROGRESS_FILE).unlink(missing_ok=True)


def read_progress(index_dir: Path) -> tuple[str | None, int, int] | None:
    """``(target commit, done, total)`` of a build running now in any process, or None (no
    note, or a note left by a process that is gone)."""
    try:
        body = json.loads((index_dir / PROGRESS_FILE).read_text())
        pid, done, total = int(body["pid"]), int(body["done"]), int(body["total"])
        target = body.get("commit")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if pid != os.getpid():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass  # alive, another user's
    return (str(target) if target else None), done, total
