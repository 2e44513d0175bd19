"""Per-tenant hybrid indexes (Whoosh BM25, hnswlib vectors and late-interaction word pieces),
derived from commits: ``TenantIndex`` is the one object callers use. It keeps the index in step
with HEAD, serves reads against the live generation, and rebuilds an index that turns out to be
damaged. The parts live beside it: the folder and its generations (``layout``, ``generation``),
the builds (``build``, ``build_vectors``, ``deltas``) and the searches (``hits``,
``search_bm25``, ``search_dense``, ``search_late``, ``spelling``)."""

from __future__ import annotations

import contextlib
import contextvars
import errno
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np

from kbmem.errors import Cancelled, StorageError, ValidationError
from kbmem.ids import check_tenant
from kbmem.index import ann, embedder, resident
from kbmem.index.build import Builder, SyncReport, reporting
from kbmem.index.freshness import (
    IndexStatus,
    StillIndexing,
    clear_progress,
    read_progress,
    write_progress,
)
from kbmem.index.generation import INDEX_FORMAT, Generation, OtherFormat
from kbmem.index.hits import (
    EXCERPT_CHARS,
    FILTER_FIELDS,
    MAX_K,
    MAX_QUERY_TERMS,
    Hit,
    analyze,
    check_filters,
    check_query,
    make_hit,
)
from kbmem.index.layout import Layout, stop_if_cancelled
from kbmem.index.search_bm25 import bm25, bm25_pages
from kbmem.index.search_dense import dense
from kbmem.index.search_late import late
from kbmem.store.pagestore import PageStore
from kbmem.store.repository import KnowledgeBase

__all__ = [
    "EXCERPT_CHARS",
    "FILTER_FIELDS",
    "INDEX_FORMAT",
    "MAX_K",
    "MAX_QUERY_TERMS",
    "Generation",
    "Hit",
    "IndexStatus",
    "OtherFormat",
    "StillIndexing",
    "SyncReport",
    "TenantIndex",
    "analyze",
    "check_filters",
    "check_query",
]

log = logging.getLogger("kbmem")

# Why a read may fail with the index intact (see TenantIndex._guarded): no memory, file
# handles or disk space, no permission, or a call interrupted.
WANTING = frozenset(
    (errno.ENOMEM, errno.EMFILE, errno.ENFILE, errno.ENOSPC, errno.EACCES, errno.EPERM,
     errno.EAGAIN, errno.EINTR)
)  # fmt: skip
SYNC_WAIT = 600.0  # seconds a sync waits for another process's sync before giving up
SYNC_PEEK = 0.5  # ...and a sync that need not wait (an index to serve meanwhile exists)
# How long a request waits for the background sync that brings the index to HEAD (settings
# index.stale_wait_s and index.first_wait_s): a small change is in by then and the answer is
# fresh; a large one goes on in the background while the request is answered from the older
# index, with a notice. Without any index there is nothing to answer from: the request waits
# longer, then fails with StillIndexing.
CATCH_UP_ROUNDS = 3  # syncs one background run makes while HEAD keeps moving under it
# Niceness a background catch-up adds to its own thread (the embedding threads it starts
# inherit it): a large catch-up, such as a huge session just ingested, would otherwise take
# every core from the requests it is not holding up.
CATCH_UP_NICE = 10

T = TypeVar("T")

# Set by no_waiting(): a read that finds the index behind HEAD does not wait for the catch-up.
_NO_WAIT: contextvars.ContextVar[bool] = contextvars.ContextVar("kbmem_no_wait", default=False)


@contextlib.contextmanager
def no_waiting() -> Iterator[None]:
    """Within this block, a read that finds the index behind HEAD starts the catch-up and is
    answered from the older generation at once, as when the wait has run out (``status()``
    says how far behind it is); with no index at all it raises StillIndexing at once. For a
    caller that must not block, such as a search run on the HTTP server's event loop."""
    token = _NO_WAIT.set(True)
    try:
        yield
    finally:
        _NO_WAIT.reset(token)


# The TenantIndex each (KnowledgeBase object, tenant) shares (TenantIndex.shared), kept while
# someone holds it. The key is the knowledge base's id: an entry lives only as long as its
# index, and the index holds the knowledge base, so the id cannot be reused meanwhile.
_shared: weakref.WeakValueDictionary[tuple[int, str], TenantIndex] = weakref.WeakValueDictionary()
_shared_lock = threading.Lock()


class TenantIndex:
    """The hybrid index of one tenant. Thread-safe for readers within a process."""

    @classmethod
    def shared(cls, kb: KnowledgeBase, tenant: str) -> TenantIndex:
        """The one index of ``tenant`` that every reader of ``kb`` in this process shares
        (the service's searches and each of its chats): one catch-up thread per tenant, one
        open generation, one place in the resident indexes (kbmem.index.resident). A
        separate ``TenantIndex(kb, tenant)`` has its own, and syncs on its own."""
        key = (id(kb), check_tenant(tenant))
        with _shared_lock:
            index = _shared.get(key)
            if index is None:
                index = cls(kb, tenant)
                _shared[key] = index
            return index

    def __init__(self, kb: KnowledgeBase, tenant: str):
        self.kb = kb
        self.tenant = check_tenant(tenant)
        self.store = PageStore(kb, tenant)
        self.dir = kb.state_dir / "index" / self.tenant
        self.dir.mkdir(parents=True, exist_ok=True)
        self.layout = Layout(self.dir, self.tenant)
        self.builder = Builder(kb, self.store, self.layout)
        self._gen: Generation | None = None
        self._lock = threading.RLock()
        section = kb.settings.section("index")
        self.stale_wait = float(section["stale_wait_s"])  # defaults in kbmem.config
        self.first_wait = float(section["first_wait_s"])
        self._worker: threading.Thread | None = None
        self._worker_done = threading.Event()
        self._worker_started = 0.0
        self._worker_error: BaseException | None = None
        self._pending_seen: tuple[str | None, str, int] | None = None

    # -- generations ------------------------------------------------------------------------

    def _current_name(self) -> str | None:
        """The name of the live generation (kbmem.index.layout), or None before the first."""
        return self.layout.current_name()

    def current(self) -> Generation | None:
        """The generation ``CURRENT`` names, opened (cached while it stays current)."""
        name = self._current_name()
        with self._lock:
            if name is None:
                return None
            if self._gen is None or self._gen.name != name:
                self._gen = Generation(self.dir / name)
            gen = self._gen
        resident.touch(self)
        return gen

    def release(self) -> None:
        """Drop the open generation and what it has read (kbmem.index.resident): the next
        read opens it again. A search still using it finishes with it."""
        with self._lock:
            self._gen = None
        resident.forget(self)

    def _usable_current(self) -> tuple[Generation | None, str]:
        """The current generation if this kbmem can serve it, else None and why not."""
        try:
            gen = self.current()
        except OtherFormat as exc:
            return None, f"the index is outdated ({exc})"
        except StorageError as exc:
            return None, f"the index is corrupt ({exc})"
        if gen is None:
            return None, "there is no index yet"
        if gen.meta.get("embedder") != embedder.embedder_id():
            return None, (f"the index was built with another embedder ({gen.meta.get('embedder')})")
        written_by = (gen.meta.get("vectors") or {}).get("ann")
        if written_by != ann.ANN_BUILD:
            return None, f"the vector graph was written by another ANN build ({written_by})"
        if gen.meta.get("tenant") != self.tenant:
            return None, "the index belongs to another tenant"
        return gen, ""

    # -- freshness --------------------------------------------------------------------------

    def _pending(self, commit: str | None, head: str) -> int:
        """The tenant's commits after ``commit`` (all of them if None) up to ``head``: only its
        own, since how busy other tenants are is none of its business. Kept for the last pair
        asked: a status is read for every search, and each count is a git process."""
        seen = self._pending_seen
        if seen is not None and seen[:2] == (commit, head):
            return seen[2]
        revs = f"{commit}..{head}" if commit else head
        out = self.kb.repo.git.rev_list("--count", revs, "--", self.store.prefix)
        count = int(str(out).strip() or 0)
        self._pending_seen = (commit, head, count)
        return count

    def status(self) -> IndexStatus:
        """Which commit the served index reflects, how many of the tenant's commits are not
        in it yet, and how far a build in progress (in any process) has got."""
        head = self.kb.head()
        gen, _problem = self._usable_current()
        commit = gen.commit if gen is not None else None
        pending = 0
        if head is not None and commit != head:
            pending = self._pending(commit, head)
        done = total = None
        running = read_progress(self.dir)
        if running is not None and (gen is None or running[0] != commit):
            _target, done, total = running
        return IndexStatus(commit, head, pending, done, total, built=gen is not None)

    def fresh(self) -> bool:
        """Whether the index serves HEAD now, so that a read neither waits for a catch-up nor
        counts commits behind (two small file reads; no git process)."""
        gen, _problem = self._usable_current()
        return gen is not None and gen.commit == self.kb.head()

    def start_catch_up(self) -> float:
        """Start the background sync of this tenant unless one is running; when the running
        one started (``time.monotonic()``)."""
        with self._lock:
            if self._worker is not None and self._worker.is_alive():
                return self._worker_started
            self._worker_done.clear()
            self._worker_error = None
            self._worker_started = time.monotonic()
            self._worker = threading.Thread(
                target=self._catch_up, name=f"kbmem-index-{self.tenant}", daemon=True
            )
            self._worker.start()
            return self._worker_started

    def _catch_up(self) -> None:
        """Sync until the index reflects HEAD (HEAD may move while it builds), yielding the
        cores to requests (CATCH_UP_NICE; this thread's own niceness, on Linux)."""
        with contextlib.suppress(OSError, AttributeError):
            me = threading.get_native_id()
            niced = min(19, os.getpriority(os.PRIO_PROCESS, me) + CATCH_UP_NICE)
            os.setpriority(os.PRIO_PROCESS, me, niced)
        try:
            for _round in range(CATCH_UP_ROUNDS):
                self.sync()
                gen, _problem = self._usable_current()
                if gen is not None and gen.commit == self.kb.head():
                    break
        except BaseException as exc:  # kept for the request that waits on it
            self._worker_error = exc
            log.warning("tenant %s: background index sync failed: %s", self.tenant, exc)
        finally:
            self._worker_done.set()

    def ensure_synced(
        self,
        progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
        wait_s: float | None = None,
    ) -> Generation:
        """The current generation, brought to HEAD first if HEAD moved (a cheap check when it
        did not).

        The sync runs in a background thread, one per tenant index, and this waits for it up
        to ``wait_s`` (default: what is left of ``stale_wait``, or of ``first_wait`` when there
        is no index yet, counted from the start of the running sync).
        A sync still running then goes on, and the older generation is served: ``status()``
        says how far behind it is. With no index to serve, StillIndexing says how far the
        first build has got. A caller that follows the sync itself (``progress``) or may stop
        it (``cancel``) runs it in its own thread instead, as long as it takes."""
        head = self.kb.head()
        gen, _problem = self._usable_current()
        if gen is not None and gen.commit == head:
            return gen
        if progress is not None or cancel is not None:
            return self._sync_here(gen, progress, cancel)
        started = self.start_catch_up()
        if _NO_WAIT.get():
            wait_s = 0.0
        elif wait_s is None:
            # The wait is counted from the catch-up's start, not the request's: a large
            # catch-up delays the requests behind it by at most this much in all, and the
            # ones that come later are answered at once from the older generation, with the
            # notice, instead of each waiting the whole time again.
            budget = self.stale_wait if gen else self.first_wait
            wait_s = max(0.0, started + budget - time.monotonic())
        self._worker_done.wait(wait_s)
        gen, _problem = self._usable_current()
        if gen is not None:
            return gen
        error = self._worker_error
        if self._worker_done.is_set() and error is not None:
            raise error
        status = self.status()
        doing = status.as_dict()["indexing"]
        so_far = f"{doing['done']:,} of {doing['total']:,} intervals done" if doing else "starting"
        raise StillIndexing(
            f"the index of tenant {self.tenant} is being built ({so_far}); ask again shortly",
            status,
        )

    def _sync_here(
        self,
        gen: Generation | None,
        progress: Callable[[int, int], None] | None,
        cancel: threading.Event | None,
    ) -> Generation:
        """Sync in this thread (see ensure_synced) and return the generation then current."""
        self.sync(progress=progress, wait=gen is None, cancel=cancel)
        gen, problem = self._usable_current()
        if gen is None:
            raise StorageError(f"no usable index for tenant {self.tenant}: {problem}")
        return gen

    def serving(self) -> Generation:
        """The generation readers are served now, without checking whether HEAD moved (for
        look-ups made many times within one search, which already synced)."""
        gen, _problem = self._usable_current()
        return gen if gen is not None else self.ensure_synced()

    def _guarded(
        self, action: Callable[[Generation], T], cancel: threading.Event | None = None
    ) -> T:
        """Run a read against the current generation; if the index turns out to be damaged
        while reading it (a file that opened but does not read back), rebuild it from scratch
        with a warning and try once more. ``cancel`` stops the syncs this needs.

        A read that failed for want of memory, file handles or disk space, or for lack of
        permission, says so instead: the index is sound, and a rebuild (minutes on a large
        tenant) would only fail the same way."""
        gen = self.ensure_synced(cancel=cancel)
        try:
            return action(gen)
        except ValidationError:
            raise
        except MemoryError:
            raise
        except Exception as exc:
            if isinstance(exc, OSError) and exc.errno in WANTING:
                raise StorageError(
                    f"the index of tenant {self.tenant} could not be read ({exc}); it is not "
                    "damaged and was not rebuilt"
                ) from exc
            if self._current_name() != gen.name:
                # A sync replaced (and may have removed) the generation under this read:
                # nothing is damaged, read the new one.
                return action(self.ensure_synced(cancel=cancel))
            log.warning(
                "tenant %s: the index failed while reading it (%s: %s); rebuilding it",
                self.tenant,
                type(exc).__name__,
                exc,
            )
        with self._lock:
            self._gen = None
        self.sync(full=True, cancel=cancel)
        return action(self.ensure_synced(cancel=cancel))

    def sync(
        self,
        full: bool = False,
        progress: Callable[[int, int], None] | None = None,
        wait: bool = True,
        cancel: threading.Event | None = None,
    ) -> SyncReport:
        """Bring the index to HEAD: incrementally when possible, from scratch when asked or
        when the live index is missing, foreign or corrupt.

        Setting ``cancel`` (a program that is closing) stops the sync with Cancelled: while
        it waits for another sync, or after the build's current step. So does an exception
        from ``progress``. Either way the partial build is discarded, the live index keeps
        serving the commit it had, and the next sync resumes from there."""
        started = time.perf_counter()
        caller_failed: list[BaseException] = []
        with self.layout.lock(SYNC_WAIT if wait else SYNC_PEEK, cancel) as got:
            stop_if_cancelled(cancel, self.tenant)
            if not got:
                return SyncReport(self.tenant, None, "none", reason="another process is syncing")
            head = self.kb.head()
            progress = reporting(self._noting(head, progress), cancel, caller_failed, self.tenant)
            try:
                report = self._sync_locked(head, full, progress, cancel, caller_failed)
            finally:
                clear_progress(self.dir)
            self.layout.collect_garbage()
        report.seconds = time.perf_counter() - started
        return report

    def _noting(
        self, head: str | None, progress: Callable[[int, int], None] | None
    ) -> Callable[[int, int], None]:
        """``progress``, after noting it where status() (in any process) reads it."""

        def note(done: int, total: int) -> None:
            write_progress(self.dir, head, done, total)
            if progress is not None:
                progress(done, total)

        return note

    def _sync_locked(
        self,
        head: str | None,
        full: bool,
        progress: Callable[[int, int], None],
        cancel: threading.Event | None,
        caller_failed: list[BaseException],
    ) -> SyncReport:
        """The body of sync(), run holding the sync lock."""
        gen, problem = self._usable_current()
        if gen is not None and gen.commit == head and not full:
            return SyncReport(self.tenant, head, "none", reason="up to date")
        if problem and problem != "there is no index yet":
            log.warning("tenant %s: %s; rebuilding it from scratch", self.tenant, problem)
        if full or gen is None or gen.commit is None or head is None:
            report = self._build_full(head, progress, cancel)
            report.reason = "asked for a full rebuild" if full else problem
        else:
            try:
                report = self._build_incremental(gen, head, progress, cancel)
            except Cancelled:
                raise
            except Exception as exc:  # a damaged live index shows up here: start over
                if caller_failed:
                    # The caller stopped the sync, or its progress callback failed (a UI
                    # that is closing): the index is sound, and a full rebuild would only
                    # keep the caller waiting.
                    raise
                log.warning("tenant %s: incremental sync failed (%s); rebuilding", self.tenant, exc)
                report = self._build_full(head, progress, cancel)
                report.reason = f"incremental sync failed: {exc}"
        return report

    # -- building (delegated; kept as methods so that a test can wrap one) --------------------

    def _build_full(
        self,
        head: str | None,
        progress: Callable[[int, int], None] | None,
        cancel: threading.Event | None = None,
    ) -> SyncReport:
        """Build and publish a generation of ``head`` from scratch."""
        return self.builder.full(head, progress, cancel)

    def _build_incremental(
        self,
        gen: Generation,
        head: str,
        progress: Callable[[int, int], None] | None,
        cancel: threading.Event | None = None,
    ) -> SyncReport:
        """Build and publish the generation of ``head`` from ``gen`` and what changed."""
        return self.builder.incremental(gen, head, progress, cancel)

    # -- searching --------------------------------------------------------------------------

    def _hit(self, doc: dict[str, Any], score: float, retriever: str) -> Hit:
        return make_hit(doc, score, retriever, self.tenant)

    def _bm25(self, gen: Generation, terms: list[str], k: int, flt: dict[str, str]) -> list[Hit]:
        return bm25(gen, terms, k, flt, self.tenant)

    def warm(self, cancel: threading.Event | None = None) -> None:
        """Read the index once the way a search does (its reader, one term's postings, page
        lengths, the vectors), so that the first real search does not also pay for lazy
        imports and cold files: a program that will search soon calls this in a background
        thread (the TUI, while the embedding model loads). It embeds nothing but what a sync
        to HEAD needs; setting ``cancel`` stops that sync (Cancelled)."""

        def read(gen: Generation) -> None:
            if gen.count == 0:
                return
            analyze("warming the analyzer")
            reader = gen.searcher().reader()
            gen.view().pages(reader)
            first = next(iter(reader.lexicon("text")), None)
            if first is not None:
                term = first.decode("utf-8") if isinstance(first, bytes) else str(first)
                self._bm25(gen, [term], 1, {})
            gen.base()
            gen.delta()

        self._guarded(read, cancel)

    def bm25(self, query: str, k: int = 10, filters: dict[str, Any] | None = None) -> list[Hit]:
        """The ``k`` intervals that BM25 ranks best for ``query``'s terms, each read as the
        index spells it (kbmem.index.spelling), among those that pass ``filters``."""
        query, k = check_query(query, k)
        flt = check_filters(filters)
        terms = analyze(query)
        if not terms:
            return []
        return self._guarded(lambda gen: self._bm25(gen, [gen.spelled(t) for t in terms], k, flt))

    def bm25_pages(
        self, query: str, k: int = 10, filters: dict[str, Any] | None = None
    ) -> list[tuple[str, float]]:
        """Pages ranked by BM25 over each page's text as one document (the sum of its
        intervals' term counts and lengths): a page whose different turns match different
        words of the query ranks above one lucky turn."""
        query, k = check_query(query, k)
        flt = check_filters(filters)
        terms = analyze(query)
        if not terms:
            return []
        return self._guarded(lambda gen: bm25_pages(gen, [gen.spelled(t) for t in terms], k, flt))

    def dense(
        self,
        query: str,
        k: int = 10,
        filters: dict[str, Any] | None = None,
        vector: np.ndarray | None = None,
    ) -> list[Hit]:
        """The ``k`` intervals nearest to ``query`` (or to its precomputed ``vector``) among
        those that pass ``filters``."""
        query, k = check_query(query, k)
        flt = check_filters(filters)
        if vector is None and not analyze(query):
            return []  # only stop words or punctuation: nothing to look for
        return self._guarded(lambda gen: dense(gen, query, k, flt, vector, self.tenant))

    def bm25_and_dense(
        self, query: str, k: int = 10, filters: dict[str, Any] | None = None
    ) -> dict[str, list[Hit]]:
        """``bm25`` and ``dense`` of ``query`` (by tool name), from one generation: a hybrid
        search checks HEAD and the live generation once, not once per ranking."""
        query, k = check_query(query, k)
        flt = check_filters(filters)
        terms = analyze(query)
        if not terms:
            return {"bm25": [], "dense": []}

        def read(gen: Generation) -> dict[str, list[Hit]]:
            return {
                "bm25": self._bm25(gen, [gen.spelled(t) for t in terms], k, flt),
                "dense": dense(gen, query, k, flt, None, self.tenant),
            }

        return self._guarded(read)

    def late(self, query: str, k: int = 10, filters: dict[str, Any] | None = None) -> list[Hit]:
        """The ``k`` intervals that late interaction (kbmem.index.late) ranks best for ``query``:
        exact, over every live interval that passes the filters."""
        query, k = check_query(query, k)
        flt = check_filters(filters)
        if not analyze(query):
            return []  # only stop words or punctuation: nothing to look for
        return self._guarded(lambda gen: late(gen, query, k, flt, self.tenant))

    def all_intervals(self) -> list[Hit]:
        """Every live interval of the index, sorted by key (score 0): what the index holds."""

        def read(gen: Generation) -> list[Hit]:
            searcher = gen.searcher()
            docs = (searcher.stored_fields(int(d)) for d in gen.view().live_docs)
            hits = [self._hit(d, 0.0, "page") for d in docs]
            return sorted(hits, key=lambda h: h.interval.key)

        return self._guarded(read)

    def speakers(self) -> list[str]:
        """Everyone who speaks in the tenant's memory (turn speakers), sorted."""
        return self._guarded(lambda gen: gen.speakers() if gen.count else [])

    def intervals_of(self, page_id: str) -> list[Hit]:
        """Every indexed interval of one page, in line order (score 0)."""

        def read(gen: Generation) -> list[Hit]:
            docs = list(gen.searcher().documents(page=page_id))
            hits = (self._hit(d, 0.0, "page") for d in docs)
            return sorted(hits, key=lambda h: h.interval.start)

        return self._guarded(read)
