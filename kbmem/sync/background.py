"""Syncing in the background, and the health every interface shows.

A :class:`BackgroundSync` watches HEAD: a commit by any writer of this process or another is
synced after a short quiet spell (so a burst of commits makes one sync), and the remote is
checked every ``sync.interval_s`` seconds in any case. A remote that cannot be reached is
retried with doubling waits (up to ten intervals); work goes on locally meanwhile. As a write
of this process begins (the knowledge base's ``before_write`` hook), what the last fetch saw
ahead on the remote is joined first, without the network, so the write lands on the newest
memory. Commits that arrive are handed to ``on_pull`` (a server brings its open indexes up to
them) once local writes pause.

:func:`sync_after_write` is the one-shot writers' form (``kbmem ingest``): one sync after the
commits, waited for a bounded time, never failing the write.

:func:`sync_status` is what the API's health and the TUI's status bar show: ahead/behind (as
of the last fetch), the last sync, the last error and the pages kept in two versions. It reads
only local state, and runs git only when that state changed, so it is cheap enough for
every request.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from git.refs.symbolic import SymbolicReference

from kbmem.errors import KbmemError
from kbmem.store.repository import KnowledgeBase
from kbmem.sync.engine import (
    Remote,
    SyncResult,
    conflict_copies,
    git_run,
    integrate_fetched,
    read_state,
    remote_of,
    sync,
)

log = logging.getLogger("kbmem")

# A commit is synced once its writer has been quiet this long (one sync for a burst).
DEBOUNCE_S = 0.3
POLL_S = 0.25
MAX_BACKOFF_INTERVALS = 10
# How long a one-shot writer waits for its sync before it exits with the commits local.
AFTER_WRITE_WAIT_S = 20.0


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

    def health(self) -> dict[str, Any]:
        """The status for a health probe, which anyone may call: counts of the conflicts and
        rescue refs rather than their paths (page and tenant names), and no URL."""
        shown = self.to_dict()
        del shown["url"]
        shown["conflicts"] = len(self.conflicts)
        shown["rescued"] = len(self.rescued)
        return shown

    def summary(self, now: datetime | None = None) -> str:
        """One short line for a status bar: ``sync ↑2 ↓0 · 12 s ago``, with ``offline`` or
        ``failed`` after an error and the conflict count, or why there is no sync."""
        if not self.configured:
            return "sync: no remote"
        if not self.enabled:
            return "sync: off"
        parts = [f"sync ↑{self.ahead or 0} ↓{self.behind or 0}"]
        if self.conflicts:
            parts.append(f"{len(self.conflicts)} conflict(s)")
        if self.last_error:
            parts.append("offline" if "cannot be reached" in self.last_error else "failed")
        if self.last_sync:
            parts.append(_age(self.last_sync, now or datetime.now(UTC)))
        elif not self.last_error:
            parts.append("never synced")
        return " · ".join(parts)


def _age(stamp: str, now: datetime) -> str:
    """How long ago ``stamp`` (ISO 8601 with an offset) was: ``12 s ago``, ``5 min ago``."""
    try:
        seconds = max(0, int((now - datetime.fromisoformat(stamp)).total_seconds()))
    except (ValueError, TypeError):
        return stamp
    if seconds < 90:
        return f"{seconds} s ago"
    if seconds < 90 * 60:
        return f"{seconds // 60} min ago"
    if seconds < 36 * 3600:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} d ago"


def sync_status(kb: KnowledgeBase) -> SyncStatus:
    """The current sync health of ``kb`` (local reads only; no network). A fresh object on
    every call; the git processes behind it run only when what they read has changed (see
    _StatusMemo), so health probes and status bars may call it as often as they like."""
    settings = kb.settings.section("sync")
    try:
        remote = _MEMO.remote(kb)
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
    head = kb.head()
    if remote.url is not None and head is not None:
        ahead, behind = _MEMO.counts(kb, head, remote)
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
        conflicts=_MEMO.conflicts(kb, head),
        rescued=list(state.get("rescued", [])),
    )


def tracking_commit(kb: KnowledgeBase, remote: Remote) -> str | None:
    """The remote-tracking commit (as of the last fetch), read from the ref files as HEAD is:
    no git process."""
    try:
        return str(SymbolicReference.dereference_recursive(kb.repo, remote.tracking_ref))
    except (ValueError, OSError):
        return None


class _StatusMemo:
    """The answers of the git processes behind :func:`sync_status`, each kept while the files
    it depends on are unchanged: the remote while git's config, HEAD's branch and the sync
    settings are; ahead/behind while HEAD and the tracking commit are; the conflict copies
    while HEAD is. Checking that is a few file reads, so an unauthenticated health probe
    cannot make the server fork git on every request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._remote: dict[str, tuple[tuple[Any, ...], Remote | KbmemError]] = {}
        self._counts: dict[str, tuple[tuple[Any, ...], tuple[int, int]]] = {}
        self._conflicts: dict[str, tuple[str | None, list[str]]] = {}

    def remote(self, kb: KnowledgeBase) -> Remote:
        settings = kb.settings.section("sync")
        key = (
            _stamp(Path(kb.repo.common_dir) / "config"),
            _text(Path(kb.repo.git_dir) / "HEAD"),
            settings["remote"],
            settings["branch"],
        )
        with self._lock:
            kept = self._remote.get(str(kb.root))
        if kept is None or kept[0] != key:
            try:
                answer: Remote | KbmemError = remote_of(kb)
            except KbmemError as exc:
                answer = exc
            kept = (key, answer)
            with self._lock:
                self._remote[str(kb.root)] = kept
        if isinstance(kept[1], KbmemError):
            raise kept[1]
        return kept[1]

    def counts(self, kb: KnowledgeBase, head: str, remote: Remote) -> tuple[int, int]:
        key = (head, remote.name, remote.branch, tracking_commit(kb, remote))
        with self._lock:
            kept = self._counts.get(str(kb.root))
        if kept is not None and kept[0] == key:
            return kept[1]
        done = git_run(
            kb, "rev-list", "--left-right", "--count", f"HEAD...{remote.tracking_ref}", check=False
        )
        if done.returncode == 0:
            left, right = done.stdout.split()
            counts = (int(left), int(right))
        else:  # never fetched: everything here is ahead
            counts = (int(git_run(kb, "rev-list", "--count", "HEAD").stdout), 0)
        with self._lock:
            self._counts[str(kb.root)] = (key, counts)
        return counts

    def conflicts(self, kb: KnowledgeBase, head: str | None) -> list[str]:
        with self._lock:
            kept = self._conflicts.get(str(kb.root))
        if kept is not None and kept[0] == head:
            return list(kept[1])
        found = conflict_copies(kb)
        with self._lock:
            self._conflicts[str(kb.root)] = (head, found)
        return list(found)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


_MEMO = _StatusMemo()


def sync_after_write(kb: KnowledgeBase, wait: float = AFTER_WRITE_WAIT_S) -> SyncStatus | None:
    """One sync after a one-shot writer's commits, waited for at most ``wait`` seconds; its
    status afterwards (``last_error`` set when it failed or is still running), or None when
    sync is off or git knows no remote. Never raises: a remote that cannot be reached leaves
    the commits here, ahead, for the next sync to send."""
    if not sync_active(kb):
        return None
    failed: list[str] = []

    def run() -> None:
        try:
            sync(kb)
        except KbmemError as exc:
            failed.append(str(exc))

    # A daemon thread: a remote that hangs must not keep the command from exiting. A sync
    # cut short by the exit is safe (see kbmem.sync.engine).
    worker = threading.Thread(target=run, name="kbmem-sync-after-write", daemon=True)
    worker.start()
    worker.join(wait)
    status = sync_status(kb)
    if worker.is_alive():
        status.last_error = f"the sync was still running after {wait:g} s (it goes on later)"
    elif failed:
        status.last_error = failed[0]
    return status


def sync_active(kb: KnowledgeBase) -> bool:
    """Whether writers of ``kb`` sync: ``sync.enabled`` on and git knows the remote."""
    try:
        return bool(kb.settings.section("sync")["enabled"]) and remote_of(kb).url is not None
    except KbmemError:
        return False  # a detached HEAD with no sync.branch: 'kbmem sync' says why


class BackgroundSync:
    """Sync ``kb`` after commits (debounced) and every interval, in a daemon thread.

    ``start()`` it beside any writer; ``stop()`` waits for a sync in progress to end (a sync
    cut short by process exit is safe too: see :mod:`kbmem.sync.engine`). While it runs, a
    write of this process first joins what the last fetch saw ahead (:meth:`before_write`).
    ``on_pull`` is called, in a thread of its own, after commits arrived from the remote,
    once this process's writers have paused for the debounce spell (indexing what arrived
    yields to writing). Does nothing (and says so in its status) when the settings turn sync
    off or git knows no remote."""

    def __init__(
        self,
        kb: KnowledgeBase,
        interval: float | None = None,
        debounce: float = DEBOUNCE_S,
        on_pull: Callable[[], None] | None = None,
    ):
        self.kb = kb
        self.interval = float(interval or kb.settings.section("sync")["interval_s"])
        self.debounce = debounce
        self.on_pull = on_pull
        self.last_result: SyncResult | None = None
        self.last_error: str | None = None
        self.syncs = 0
        # Set once the first sync (at start) has ended, either way.
        self.first_sync = threading.Event()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._pulled = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._remote: Remote | None = None
        self._joined: str | None = None  # the remote-tracking commit known to be in HEAD
        self._last_write = 0.0  # monotonic time a commit not made by a sync was seen

    def active(self) -> bool:
        return sync_active(self.kb)

    def start(self) -> BackgroundSync:
        if not self._threads and self.active():
            self._remote = remote_of(self.kb)
            self.kb.before_write.append(self.before_write)
            self._threads.append(threading.Thread(target=self._run, name="kbmem-sync", daemon=True))
            if self.on_pull is not None:
                self._threads.append(
                    threading.Thread(target=self._follow, name="kbmem-sync-pull", daemon=True)
                )
            for thread in self._threads:
                thread.start()
        return self

    def stop(self, timeout: float = 30) -> None:
        self._stop.set()
        self._wake.set()
        self._pulled.set()
        if self.before_write in self.kb.before_write:
            self.kb.before_write.remove(self.before_write)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._threads = []

    def finish(self, wait: float = AFTER_WRITE_WAIT_S) -> SyncStatus | None:
        """Stop, then send what the last commits left unsent (a server's or chat's closing
        commits) with one sync waited for at most ``wait`` seconds, as a one-shot writer
        does; its status, or None when it was not running."""
        was_running = bool(self._threads)
        self.stop(timeout=wait)  # a sync hanging on the network is not waited for longer
        return sync_after_write(self.kb, wait) if was_running else None

    def __enter__(self) -> BackgroundSync:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def sync_now(self) -> SyncResult | None:
        """One sync now (serialised with the thread's); None when it failed (see last_error)."""
        with self._lock:
            try:
                self.last_result = sync(self.kb)
            except KbmemError as exc:
                self.last_error = str(exc)
                log.info("sync: %s", exc)
                return None
            self.last_error = None
            self.syncs += 1
            if self._remote is not None:
                self._joined = self._tracking(self._remote)  # what this sync joined
            if self.last_result.moved_in:
                self._pulled.set()
            return self.last_result

    def before_write(self) -> None:
        """Join what the last fetch saw ahead on the remote into HEAD, with no network, so
        that a write lands on the newest memory. Skipped while a sync runs (it joins the
        remote itself, and may be this very thread moving HEAD); never raises."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            remote = self._remote or remote_of(self.kb)
            theirs = self._tracking(remote)
            if theirs is None or theirs == self._joined:
                return  # the common case, one file read: nothing new was fetched
            result = integrate_fetched(self.kb, remote)
            self._joined = theirs
            if result.moved_in:
                log.info("sync: joined %s before a write (%s)", remote.name, result.action)
                self._pulled.set()
        except KbmemError as exc:
            log.info("sync: could not join the remote before a write: %s", exc)
        finally:
            self._lock.release()

    def status(self) -> SyncStatus:
        return sync_status(self.kb)

    def _tracking(self, remote: Remote) -> str | None:
        """The remote-tracking commit, with no git process: this runs before every write."""
        return tracking_commit(self.kb, remote)

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
                dirty_since = self._last_write = now
            due = now >= next_due or (
                dirty_since is not None and now - dirty_since >= self.debounce
            )
            if due:
                result = self.sync_now()
                seen = self.kb.head()
                dirty_since = None
                self.first_sync.set()
                if result is None:
                    failures += 1
                    wait = self.interval * min(2 ** (failures - 1), MAX_BACKOFF_INTERVALS)
                    next_due = time.monotonic() + wait * random.uniform(0.8, 1.0)
                else:
                    failures = 0
                    next_due = time.monotonic() + self.interval
            self._wake.wait(POLL_S)

    def _follow(self) -> None:
        """Hand arrived commits to ``on_pull`` once local writes have paused."""
        assert self.on_pull is not None
        while not self._stop.is_set():
            if not self._pulled.wait(POLL_S * 4):
                continue
            self._pulled.clear()
            while not self._stop.is_set() and time.monotonic() - self._last_write < self.debounce:
                self._stop.wait(POLL_S)
            if self._stop.is_set():
                return
            try:
                self.on_pull()
            except Exception as exc:  # a failed catch-up is the next search's to repeat
                log.warning("sync: bringing indexes up to the pulled commits failed: %s", exc)
