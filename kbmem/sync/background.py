"""Syncing in the background, and the health every interface shows.

A :class:`BackgroundSync` watches HEAD: a commit by any writer of this process or another is
synced after a short quiet spell (so a burst of commits makes one sync), and the remote is
checked every ``sync.interval_s`` seconds in any case. A remote that cannot be reached is
retried with doubling waits (up to ten intervals); work goes on locally meanwhile.

:func:`sync_status` is what the API's health and the TUI's status bar show: ahead/behind (as
of the last fetch), the last sync, the last error and the pages kept in two versions. It reads
only local state, so it is cheap enough for every request.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from kbmem.errors import KbmemError
from kbmem.store.repository import KnowledgeBase
from kbmem.sync.engine import (
    SyncResult,
    conflict_copies,
    git_run,
    read_state,
    remote_of,
    sync,
)

log = logging.getLogger("kbmem")

DEBOUNCE_S = 1.0
POLL_S = 0.25
MAX_BACKOFF_INTERVALS = 10


@dataclass
class SyncStatus:
    """The health of sync for one knowledge base (JSON-ready with :meth:`to_dict`)."""

    configured: bool  # git knows the remote the settings name
    enabled: bool
    remote: str
    branch: str
    url: str | None
    ahead: int | None  # local commits the remote has not (as of the last fetch)
    behind: int | None  # remote commits not yet integrated here
    last_sync: str | None
    last_error: str | None
    conflicts: list[str] = field(default_factory=list)
    rescued: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        """One short line for a status bar: ``sync ↑2 ↓0 · 12:03:04`` or why it is not."""
        if not self.configured:
            return "sync: no remote"
        if not self.enabled:
            return "sync: off"
        parts = [f"sync ↑{self.ahead or 0} ↓{self.behind or 0}"]
        if self.conflicts:
            parts.append(f"{len(self.conflicts)} conflict(s)")
        if self.last_error:
            parts.append("offline" if "cannot be reached" in self.last_error else "error")
        elif self.last_sync:
            parts.append(self.last_sync[11:19])
        return " · ".join(parts)


def sync_status(kb: KnowledgeBase) -> SyncStatus:
    """The current sync health of ``kb`` (local reads only; no network)."""
    settings = kb.settings.section("sync")
    try:
        remote = remote_of(kb)
    except KbmemError as exc:
        return SyncStatus(
            False,
            bool(settings["enabled"]),
            settings["remote"],
            "",
            None,
            None,
            None,
            None,
            str(exc),
        )
    state = read_state(kb)
    ahead = behind = None
    if remote.url is not None and kb.head() is not None:
        tracking = f"refs/remotes/{remote.name}/{remote.branch}"
        done = git_run(kb, "rev-list", "--left-right", "--count", f"HEAD...{tracking}", check=False)
        if done.returncode == 0:
            left, right = done.stdout.split()
            ahead, behind = int(left), int(right)
        else:
            ahead, behind = int(git_run(kb, "rev-list", "--count", "HEAD").stdout), 0
    return SyncStatus(
        configured=remote.url is not None,
        enabled=bool(settings["enabled"]),
        remote=remote.name,
        branch=remote.branch,
        url=remote.url,
        ahead=ahead,
        behind=behind,
        last_sync=state.get("last_sync"),
        last_error=state.get("last_error"),
        conflicts=conflict_copies(kb),
        rescued=list(state.get("rescued", [])),
    )


class BackgroundSync:
    """Sync ``kb`` after commits (debounced) and every interval, in a daemon thread.

    ``start()`` it beside any writer; ``stop()`` waits for a sync in progress to end (a sync
    cut short by process exit is safe too: see :mod:`kbmem.sync.engine`). ``before_write()``
    syncs first when the last fetch saw the remote ahead. Does nothing (and says so in its
    status) when the settings turn sync off or git knows no remote."""

    def __init__(
        self, kb: KnowledgeBase, interval: float | None = None, debounce: float = DEBOUNCE_S
    ):
        self.kb = kb
        self.interval = float(interval or kb.settings.section("sync")["interval_s"])
        self.debounce = debounce
        self.last_result: SyncResult | None = None
        self.last_error: str | None = None
        self.syncs = 0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def active(self) -> bool:
        return (
            bool(self.kb.settings.section("sync")["enabled"]) and remote_of(self.kb).url is not None
        )

    def start(self) -> BackgroundSync:
        if self._thread is None and self.active():
            self._thread = threading.Thread(target=self._run, name="kbmem-sync", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 30) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> BackgroundSync:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def sync_now(self) -> SyncResult | None:
        """One sync now (serialised with the thread's); None when it failed (see last_error)."""
        with self._lock:
            try:
                self.last_result = sync(self.kb)
                self.last_error = None
                self.syncs += 1
                return self.last_result
            except KbmemError as exc:
                self.last_error = str(exc)
                log.info("sync: %s", exc)
                return None

    def before_write(self) -> None:
        """Integrate the remote first when it is known to be ahead (a write then lands on
        the newest memory, not beside it)."""
        status = sync_status(self.kb)
        if status.configured and status.enabled and status.behind:
            self.sync_now()

    def status(self) -> SyncStatus:
        return sync_status(self.kb)

    def _run(self) -> None:
        seen = self.kb.head()
        next_due = time.monotonic()  # sync once at start
        failures = 0
        dirty_since: float | None = None
        while not self._stop.is_set():
            now = time.monotonic()
            head = self.kb.head()
            if head != seen:
                seen = head
                dirty_since = now
            due = now >= next_due or (
                dirty_since is not None and now - dirty_since >= self.debounce
            )
            if due:
                result = self.sync_now()
                seen = self.kb.head()
                dirty_since = None
                if result is None:
                    failures += 1
                    wait = self.interval * min(2 ** (failures - 1), MAX_BACKOFF_INTERVALS)
                    next_due = time.monotonic() + wait * random.uniform(0.8, 1.0)
                else:
                    failures = 0
                    next_due = time.monotonic() + self.interval
            self._wake.wait(POLL_S)
