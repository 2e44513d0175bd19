"""Per-tenant hybrid indexes (Whoosh BM25 + hnswlib vectors), derived from commits.

Layout under ``.kbmem/index/<tenant>/``::

    CURRENT            name of the generation readers use (replaced atomically)
    gen-<id>/          meta.json; whoosh/ (BM25 postings + the interval table);
                       vectors.hnsw (the base vector graph); delta.npz (vectors added since)
    sync.lock          one syncing process at a time

A sync builds a new generation beside the live one and swaps ``CURRENT`` at the end, so a
reader always sees a consistent index of some commit; a sync killed half-way leaves the old
generation serving and a stray folder that the next sync removes.

An incremental sync costs what changed, not the size of the index: it starts from hard links
of the live generation's files (Whoosh never rewrites a file in place, and the vector graph is
never written in place either), applies only the pages that ``git diff`` names to Whoosh, and
keeps the new intervals' vectors in a small ``delta`` beside the base graph, together with the
labels of base intervals that died. Searches read the base graph (approximate) plus the delta
(exact). Once the delta grows past a threshold, a sync folds it into a new base graph (dead
vectors are marked deleted, and their slots are reused by new ones).

An interval has several vectors: one of its whole text, and, when it says more than one thing,
one per sentence (``kbmem.index.vectors``: what is embedded, the graph on disk, and its searches).

BM25 is scored with numpy over Whoosh's postings and field lengths (read by
``kbmem.index.postings``), counting live intervals only, so an index that was synced
incrementally (with deletions still inside segments) scores exactly like a fresh build, and a
query costs a few array operations rather than a Python call per matching document."""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import math
import os
import queue
import shutil
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hnswlib
import numpy as np
from whoosh import index as whoosh_index
from whoosh.reading import SegmentReader
from whoosh.support.levenshtein import distance

from kbmem.errors import Cancelled, StorageError, ValidationError
from kbmem.ids import check_tenant
from kbmem.index import embedder
from kbmem.index.intervals import Interval, IntervalText, cut_page
from kbmem.index.late import LATE_DELTA_FILE, LATE_FILE, PieceTable, query_pieces
from kbmem.index.postings import (
    ANALYZER,
    IndexView,
    cached_postings,
    make_codec,
    make_schema,
    merge_policy,
    segment_leaves,
)
from kbmem.index.vectors import (
    HNSW_EF_CONSTRUCTION,
    HNSW_M,
    VECTOR_STRIDE,
    GraphSearch,
    embed_texts_with_pieces,
    load_vectors,
    read_query,
    save_base,
    save_delta,
    shared_base,
    vector_labels,
    vector_texts,
)
from kbmem.store.pages import parse_page
from kbmem.store.pagestore import PageStore
from kbmem.store.repository import KnowledgeBase, atomic_write, flock_until

log = logging.getLogger("kbmem")

# 9: word-piece vectors for late interaction; 8: hyphenated words also as one word; 7: a
# vector per sentence
INDEX_FORMAT = 9
SEGMENT_DOCS = 2000  # intervals embedded per step of a build (and per progress report)
DELTA_MAX = 4096  # vectors kept beside the base graph before they are folded into it
DELTA_SHARE = 0.05  # ...or this share of the base graph, whichever is larger
# Intervals whose word pieces (kbmem.index.late) are kept beside the base table before they are
# folded into a new one (or DELTA_SHARE of the base): a sync rewrites the delta, about 30 KB
# an interval.
LATE_DELTA_MAX = 512
EXACT_MAX = 4096  # filtered dense searches over at most this many intervals are exact
# ...and the vectors of this many recent filters are kept (6 MB per 4,096 vectors; on LoCoMo an
# interval has 3.6 vectors on average, about 22 MB for a filter of EXACT_MAX intervals)
FILTERED_CACHE = 8
BM25_B = 0.75
BM25_K1 = 1.2
# A keyword search reads a query term that no interval holds as the nearest term that some do
# ("fesetival" as "festival", "reccomended" as "recommended"): one edit away for a term of
# SPELL_ONE characters or more (as the index spells it, stemmed), two for SPELL_TWO or more,
# the first letter kept. Shorter terms have too many neighbours to guess from ("Greene" is
# one edit from "greet"), so they are left as asked.
SPELL_ONE = 6
SPELL_TWO = 9


def page_idf(pages: int, having: int) -> float:
    """How much a term says about which page is meant, held by ``having`` of ``pages``
    pages: Robertson and Spärck Jones's weight, as Lucene's BM25 has it, which falls to
    nearly nothing for a term every page holds. The names of the two people of a
    conversation are on every page of it; with the floor of 1 that Whoosh's formula gives
    such a term, a name scored about a quarter of a rare word, and the long pages where the
    name occurs most outranked the pages that held what was asked. (Intervals keep
    Whoosh's weight: there a name still tells whose turn it is, and on LoCoMo the same
    change for intervals cost 0.007 of interval coverage.)"""
    return math.log(1.0 + (pages - having + 0.5) / (having + 0.5))


MAX_K = 1000
MAX_QUERY_TERMS = 256
# A hit's excerpt is the start of its interval: a 10 MB turn must not travel whole in every
# search result (the interval, read with the toolkit, gives all of it).
EXCERPT_CHARS = 2000
FILTER_FIELDS = ("session", "page", "tags", "classification", "kind", "speaker")
# Why a read may fail with the index intact (see TenantIndex._guarded): no memory, file
# handles or disk space, no permission, or a call interrupted.
WANTING = frozenset(
    (errno.ENOMEM, errno.EMFILE, errno.ENFILE, errno.ENOSPC, errno.EACCES, errno.EPERM,
     errno.EAGAIN, errno.EINTR)
)  # fmt: skip


@dataclass
class Hit:
    """One retrieved interval (the Summit ``SearchResult`` plus the interval)."""

    page_id: str
    session_id: str
    tenant_id: str
    interval: Interval
    score: float
    retriever: str  # bm25 | dense | hybrid
    excerpt: str
    speaker: str = ""
    timestamp: str = ""
    ranks: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pageId": self.page_id,
            "sessionId": self.session_id,
            "tenantId": self.tenant_id,
            "score": round(float(self.score), 6),
            "retrieverType": self.retriever,
            "excerpt": self.excerpt,
            "speaker": self.speaker,
            "timestamp": self.timestamp,
            "interval": self.interval.to_dict(),
        }


@dataclass
class SyncReport:
    tenant: str
    commit: str | None
    mode: str  # none | full | incremental
    pages_changed: int = 0
    intervals_added: int = 0
    intervals_removed: int = 0
    seconds: float = 0.0
    reason: str = ""


def analyze(query: str) -> list[str]:
    """The query's distinct index terms, in order: plain text only, never query syntax."""
    seen: dict[str, None] = {}
    for token in ANALYZER(query):
        seen.setdefault(token.text, None)
        if len(seen) >= MAX_QUERY_TERMS:
            break
    return list(seen)


def check_query(query: object, k: object) -> tuple[str, int]:
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("must be non-empty text", "query")
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0 or k > MAX_K:
        raise ValidationError(f"must be a whole number from 1 to {MAX_K}, got {k!r}", "k")
    return query, k


def check_filters(filters: dict[str, Any] | None) -> dict[str, str]:
    if filters is not None and not isinstance(filters, dict):
        raise ValidationError("must be a mapping of field to value", "filters")
    out = {}
    for name, value in (filters or {}).items():
        if name not in FILTER_FIELDS:
            raise ValidationError(
                f"unknown filter (known: {', '.join(FILTER_FIELDS)})", f"filters.{name}"
            )
        if not isinstance(value, str) or not value.strip():
            raise ValidationError("must be non-empty text", f"filters.{name}")
        out[name] = value.strip().lower() if name == "tags" else value
    return out


def _excerpt(text: str) -> str:
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS].rstrip() + " …"


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


@contextmanager
def _flock(path: Path, timeout: float, cancel: threading.Event | None = None) -> Any:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not flock_until(fd, time.monotonic() + timeout, cancel):
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class OtherFormat(StorageError):
    """An index written by a kbmem that stored it in another format."""


class Generation:
    """One immutable, openable index generation."""

    def __init__(self, path: Path):
        self.path = path
        self.name = path.name
        try:
            self.meta = json.loads((path / "meta.json").read_text())
            if not isinstance(self.meta, dict):
                raise StorageError("meta.json is not a mapping")
            if self.meta.get("format") != INDEX_FORMAT:
                raise OtherFormat(
                    f"index {path} has format {self.meta.get('format')!r}; this kbmem reads "
                    f"format {INDEX_FORMAT}"
                )
            self.ix = whoosh_index.open_dir(str(path / "whoosh"), readonly=True)
            doc_count = self.ix.doc_count()
            vec = self.meta["vectors"]
            if int(vec["base_count"]) and (path / "vectors.hnsw").stat().st_size != int(
                vec["base_bytes"]
            ):
                raise StorageError("the vector index's size differs from its meta")
            if int(vec["delta"]) and not (path / "delta.npz").is_file():
                raise StorageError("the vector delta is missing")
            late = self.meta["late"]
            for name, count in ((LATE_FILE, late["base"]), (LATE_DELTA_FILE, late["delta"])):
                if int(count) and not (path / name).is_file():
                    raise StorageError(f"the word-piece vectors {name} are missing")
        except OtherFormat:
            raise
        except StorageError as exc:
            raise StorageError(f"index {path} cannot be opened: {exc}") from exc
        except Exception as exc:
            raise StorageError(f"index {path} cannot be opened: {exc}") from exc
        if doc_count != self.meta.get("count"):
            raise StorageError(
                f"index {path} holds {doc_count} intervals, meta says {self.meta.get('count')}"
            )
        self._local = threading.local()
        self._lock = threading.Lock()
        self._view: IndexView | None = None
        self._delta: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._speakers: list[str] | None = None
        self._filtered: OrderedDict[tuple[tuple[str, str], ...], tuple[np.ndarray, np.ndarray]] = (
            OrderedDict()
        )
        self._base_ids: np.ndarray | None = None  # every vector label of the base graph
        self._pieces: tuple[PieceTable, PieceTable] | None = None
        self._spelled: dict[str, str] = {}

    def pieces(self) -> tuple[PieceTable, PieceTable]:
        """The word-piece vectors (kbmem.index.late) of the base table and of the delta, read once
        and checked against the meta's counts."""
        with self._lock:
            if self._pieces is None:
                late = self.meta["late"]
                self._pieces = (
                    PieceTable.load(self.path / LATE_FILE, int(late["base"])),
                    PieceTable.load(self.path / LATE_DELTA_FILE, int(late["delta"])),
                )
            return self._pieces

    def pieces_of(self, label: int) -> np.ndarray | None:
        """The word-piece vectors of interval ``label``, wherever they are kept."""
        for table in self.pieces():
            found = table.pieces_of(label)
            if found is not None:
                return found
        return None

    @property
    def commit(self) -> str | None:
        return self.meta.get("commit")

    @property
    def count(self) -> int:
        return int(self.meta.get("count", 0))

    def searcher(self) -> Any:
        """A Whoosh searcher for this thread (searchers are not shared across threads)."""
        s = getattr(self._local, "searcher", None)
        if s is None:
            s = self.ix.searcher()
            self._local.searcher = s
        return s

    def view(self) -> IndexView:
        with self._lock:
            if self._view is None:
                self._view = IndexView(self.searcher().reader())
            return self._view

    def base(self) -> hnswlib.Index | None:
        if not int(self.meta["vectors"]["base_count"]):
            return None
        return shared_base(self.path / "vectors.hnsw", self.meta)

    def delta(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(vector labels, vectors) added since the base graph, and the labels of base
        intervals that died since."""
        with self._lock:
            if self._delta is None:
                vec = self.meta["vectors"]
                if not (int(vec["delta"]) or int(vec["dead"])):
                    self._delta = (
                        np.zeros(0, np.int64),
                        np.zeros((0, embedder.DIM), np.float32),
                        np.zeros(0, np.int64),
                    )
                else:
                    try:
                        with np.load(self.path / "delta.npz", allow_pickle=False) as data:
                            labels, vectors = data["labels"], data["vectors"]
                            dead = data["dead"]
                    except Exception as exc:
                        raise StorageError(
                            f"vector delta of {self.path} is damaged: {exc}"
                        ) from exc
                    if (
                        len(labels) != int(vec["delta"])
                        or vectors.shape != (len(labels), embedder.DIM)
                        or len(dead) != int(vec["dead"])
                    ):
                        raise StorageError(f"vector delta of {self.path} does not match meta")
                    self._delta = (
                        labels.astype(np.int64),
                        vectors.astype(np.float32),
                        dead.astype(np.int64),
                    )
            return self._delta

    def vectors_of(
        self, key: tuple[tuple[str, str], ...], labels: np.ndarray, base: hnswlib.Index
    ) -> tuple[np.ndarray, np.ndarray]:
        """The base graph's vector labels and vectors of the intervals ``labels``, those that
        pass the filter ``key``. Reading them from hnswlib costs about 35 µs each (50 ms for
        a speaker's turns in a long conversation), and the same filter comes back query
        after query (a speaker, a session): the last few filters' vectors are kept, of at
        most ``EXACT_MAX`` intervals each."""
        with self._lock:
            found = self._filtered.get(key)
            if found is not None:
                self._filtered.move_to_end(key)
                return found
            if self._base_ids is None:
                self._base_ids = np.asarray(base.get_ids_list(), dtype=np.int64)
            ids = self._base_ids
        wanted = ids[np.isin(ids // VECTOR_STRIDE, labels)]
        found = (wanted, np.asarray(base.get_items(wanted), dtype=np.float32))
        with self._lock:
            self._filtered[key] = found
            while len(self._filtered) > FILTERED_CACHE:
                self._filtered.popitem(last=False)
        return found

    def speakers(self) -> list[str]:
        """Everyone who speaks in a live interval of this generation, sorted."""
        with self._lock:
            found = self._speakers
        if found is None:
            reader = self.searcher().reader()
            names = [
                t.decode("utf-8") if isinstance(t, bytes) else str(t)
                for t in reader.lexicon("speaker")
            ]
            # The lexicon keeps the names of deleted intervals until their segment merges.
            found = [n for n in names if n and self.doc_frequency(n, "speaker")]
            with self._lock:
                self._speakers = found
        return list(found)

    def spelled(self, term: str) -> str:
        """``term`` (analyzed) if a live interval holds it, else the term within SPELL_ONE or
        SPELL_TWO's edits (see there) that the most live intervals hold, nearest first, or
        ``term`` itself if there is none."""
        with self._lock:
            found = self._spelled.get(term)
        if found is not None:
            return found
        found = term
        most = 2 if len(term) >= SPELL_TWO else 1 if len(term) >= SPELL_ONE else 0
        if most and not any(ch.isdigit() for ch in term) and not self.doc_frequency(term):
            reader = self.searcher().reader()
            best: tuple[int, int, str] | None = None
            for near in reader.terms_within("text", term, most, prefix=1):
                near = near.decode("utf-8") if isinstance(near, bytes) else str(near)
                if near == term or not (count := self.doc_frequency(near)):
                    continue
                rank = (distance(near, term, limit=most), -count, near)
                best = rank if best is None else min(best, rank)
            if best is not None:
                found = best[2]
        with self._lock:
            self._spelled[term] = found
        return found

    def doc_frequency(self, term: str, fieldname: str = "text") -> int:
        """How many live intervals hold ``term`` (an analyzed term)."""
        view = self.view()
        leaves = segment_leaves(self.searcher().reader())
        ids = TenantIndex._term_postings(leaves, fieldname, term)[0]
        return int(view.live[ids].sum())

    def close(self) -> None:
        s = getattr(self._local, "searcher", None)
        if s is not None:
            s.close()


def _stop_if_cancelled(cancel: threading.Event | None, tenant: str) -> None:
    if cancel is not None and cancel.is_set():
        raise Cancelled(f"the index sync of tenant {tenant} was stopped")


def _reporting(
    progress: Callable[[int, int], None] | None,
    cancel: threading.Event | None,
    failed: list[BaseException],
    tenant: str,
) -> Callable[[int, int], None]:
    """``progress`` (if any), first raising Cancelled when ``cancel`` is set, and noting in
    ``failed`` an exception either raises (which still propagates): a build checks both
    after every step."""

    def report(done: int, total: int) -> None:
        try:
            _stop_if_cancelled(cancel, tenant)
            if progress is not None:
                progress(done, total)
        except BaseException as exc:
            failed.append(exc)
            raise

    return report


class TenantIndex:
    """The hybrid index of one tenant. Thread-safe for readers within a process."""

    def __init__(self, kb: KnowledgeBase, tenant: str):
        self.kb = kb
        self.tenant = check_tenant(tenant)
        self.store = PageStore(kb, tenant)
        self.dir = kb.state_dir / "index" / self.tenant
        self.dir.mkdir(parents=True, exist_ok=True)
        self._gen: Generation | None = None
        self._current_seen: tuple[tuple[int, int, int], str | None] | None = None
        self._lock = threading.RLock()

    # -- generations ------------------------------------------------------------------------

    def _current_name(self) -> str | None:
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

    def current(self) -> Generation | None:
        """The generation ``CURRENT`` names, opened (cached while it stays current)."""
        name = self._current_name()
        with self._lock:
            if name is None:
                return None
            if self._gen is None or self._gen.name != name:
                self._gen = Generation(self.dir / name)
            return self._gen

    def _usable_current(self) -> tuple[Generation | None, str]:
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
        if gen.meta.get("tenant") != self.tenant:
            return None, "the index belongs to another tenant"
        return gen, ""

    def ensure_synced(
        self,
        progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> Generation:
        """The current generation, synced first if HEAD moved (a cheap check when it did not).
        If another process is syncing right now, serve the current generation. Setting
        ``cancel`` stops a sync this starts (Cancelled)."""
        head = self.kb.head()
        gen, _problem = self._usable_current()
        if gen is not None and gen.commit == head:
            return gen
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
        self, action: Callable[[Generation], Any], cancel: threading.Event | None = None
    ) -> Any:
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
        if progress is not None or cancel is not None:
            progress = _reporting(progress, cancel, caller_failed, self.tenant)
        with _flock(self.dir / "sync.lock", 600 if wait else 0.5, cancel) as got:
            _stop_if_cancelled(cancel, self.tenant)
            if not got:
                return SyncReport(self.tenant, None, "none", reason="another process is syncing")
            head = self.kb.head()
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
                    log.warning(
                        "tenant %s: incremental sync failed (%s); rebuilding", self.tenant, exc
                    )
                    report = self._build_full(head, progress, cancel)
                    report.reason = f"incremental sync failed: {exc}"
            self._collect_garbage()
        report.seconds = time.perf_counter() - started
        return report

    def _new_dir(self, head: str | None) -> Path:
        path = self.dir / f"gen-{(head or 'empty')[:12]}-{uuid.uuid4().hex[:8]}"
        path.mkdir()
        return path

    def _publish(
        self, path: Path, meta: dict[str, Any], cancel: threading.Event | None = None
    ) -> None:
        """Make the generation at ``path`` the live one, unless ``cancel`` was set while it
        was built (then Cancelled; the unpublished directory is collected later)."""
        _stop_if_cancelled(cancel, self.tenant)
        atomic_write(path / "meta.json", json.dumps(meta, indent=1).encode())
        atomic_write(self.dir / "CURRENT", path.name.encode())

    def _collect_garbage(self) -> None:
        """Remove generations other than the current and the one before it (a reader in
        another process may still be using that one), and any stray partial build."""
        current = self._current_name()
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

    # -- building ---------------------------------------------------------------------------

    def _intervals_at(
        self, commit: str, paths: Iterable[str] | None = None
    ) -> tuple[list[IntervalText], dict[str, dict[str, Any]]]:
        """Intervals of every page (or of ``paths``) at ``commit`` and each page's header;
        broken pages are skipped with a warning."""
        out: list[IntervalText] = []
        metas: dict[str, dict[str, Any]] = {}
        if paths is None:
            for record in self.store.iter_pages(commit):
                metas[record.page_id] = record.page.meta
                out += cut_page(record.page, record.page_id, record.path, commit, record.blob)
            return out, metas
        for path in paths:
            page_id = self.store.page_id_of(path)
            if page_id is None:
                continue
            blob = self.kb.blob_id(path, commit)
            if blob is None:
                continue
            text = self.kb.read_blob(blob).decode("utf-8", "replace")
            try:
                page = parse_page(text, path)
            except ValidationError as exc:
                log.warning("skipping %s: %s", path, exc)
                continue
            metas[page_id] = page.meta
            out += cut_page(page, page_id, path, commit, blob)
        return out, metas

    def _doc(self, item: IntervalText, label: int, meta_of: dict[str, dict[str, Any]]) -> dict:
        iv = item.interval
        page_meta = meta_of.get(iv.page_id, {})
        tags = page_meta.get("tags") or []
        return {
            "key": iv.key,
            "tenant": self.tenant,
            "label": label,
            "label_col": label,
            "session": str(page_meta.get("session_id") or ""),
            "page": iv.page_id,
            "path": iv.path,
            "kind": iv.kind,
            "tags": ",".join(str(t) for t in tags) if isinstance(tags, list) else "",
            "classification": str(page_meta.get("classification") or ""),
            "start": iv.start,
            "end": iv.end,
            "commit": iv.commit,
            "blob": iv.blob,
            "turns": list(iv.turn_ids),
            "speaker": item.speaker,
            "timestamp": item.timestamp,
            "content": item.text,
            "text": item.text,
        }

    def _embed(
        self,
        texts: list[list[str]],
        progress: Callable[[int, int], None] | None,
        done: int = 0,
        total: int = 0,
    ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """The vectors of intervals whose ``vector_texts`` are ``texts``, in order, how many
        each has, and the word-piece vectors of each one's whole text (its first; progress is
        reported in intervals)."""
        counts = np.array([len(t) for t in texts], dtype=np.int64)
        flat = [t for ts in texts for t in ts]
        firsts = set((np.cumsum(counts) - counts).tolist())
        chunks = []
        pieces: list[np.ndarray] = []
        # The model sorts each call's texts by length and pads each batch to its longest:
        # calls of 1,024 texts mix short sentences with long turns less than calls of 256
        # (12% faster over LoCoMo's turns and sentences).
        # A small build (the example's 1,099 texts) in eighths instead, so that its progress
        # bar shows counts and an estimate before it is nearly done.
        step = min(1024, max(256, -(-len(flat) // 8)))
        ends = np.cumsum(counts)
        if progress:
            progress(done, total or len(counts))  # the total, before the first step's wait
        with embedder.bulk(len(flat)):
            for i in range(0, len(flat), step):
                vectors, found = embed_texts_with_pieces(flat[i : i + step])
                chunks.append(vectors)
                pieces += [
                    p.astype(np.float16) for n, p in enumerate(found, start=i) if n in firsts
                ]
                if progress:
                    finished = int(np.searchsorted(ends, min(i + step, len(flat)), side="right"))
                    progress(done + finished, total or len(counts))
        vectors = np.vstack(chunks) if chunks else np.zeros((0, embedder.DIM), np.float32)
        return vectors.astype(np.float32), counts, pieces

    def _build_full(
        self,
        head: str | None,
        progress: Callable[[int, int], None] | None,
        cancel: threading.Event | None = None,
    ) -> SyncReport:
        path = self._new_dir(head)
        (path / "whoosh").mkdir()
        ix = whoosh_index.create_in(str(path / "whoosh"), make_schema())
        items, metas = self._intervals_at(head) if head else ([], {})
        vectors = hnswlib.Index(space="cosine", dim=embedder.DIM)
        texts = [vector_texts(it.text, it.speaker) for it in items]
        capacity = max(16, int(sum(map(len, texts)) * 1.25))
        vectors.init_index(
            max_elements=capacity,
            ef_construction=HNSW_EF_CONSTRUCTION,
            M=HNSW_M,
            allow_replace_deleted=True,
        )
        # One writer, one segment: the fewest postings lists for a query to read. Embedding
        # (the model, one core) and indexing (the graph and Whoosh, on another thread) of
        # successive chunks overlap.
        writer = ix.writer(procs=1, limitmb=256, codec=make_codec())
        pending: queue.Queue[
            tuple[int, list[IntervalText], np.ndarray, np.ndarray, list[np.ndarray]] | None
        ] = queue.Queue(2)
        pieces: list[np.ndarray] = []
        failed: list[BaseException] = []

        def index_chunks() -> None:
            while (job := pending.get()) is not None:
                start, chunk, emb, counts, found = job
                if failed:
                    continue
                try:
                    labels = vector_labels(np.arange(start, start + len(chunk)), counts)
                    vectors.add_items(emb, labels, num_threads=1)
                    pieces.extend(found)
                    for n, item in enumerate(chunk):
                        writer.add_document(**self._doc(item, start + n, metas))
                except BaseException as exc:
                    failed.append(exc)

        worker = threading.Thread(target=index_chunks, name="kbmem-index-build", daemon=True)
        worker.start()
        try:
            try:
                for i in range(0, len(items), SEGMENT_DOCS):
                    if failed:
                        break
                    chunk = items[i : i + SEGMENT_DOCS]
                    found = self._embed(texts[i : i + SEGMENT_DOCS], progress, i, len(items))
                    pending.put((i, chunk, *found))
            finally:
                pending.put(None)
                worker.join()
            if failed:
                raise failed[0]
            writer.commit()
        except BaseException:
            writer.cancel()
            raise
        ix.close()
        PieceTable.of(list(range(len(items))), pieces).save(path / LATE_FILE)
        late = {"base": len(items), "delta": 0}
        vec: dict[str, Any] = {"base_count": 0, "capacity": capacity, "delta": 0, "dead": 0}
        if items:
            vec.update(save_base(vectors, path / "vectors.hnsw"))
        vec.update({"delta": 0, "dead": 0, "marked_deleted": 0})
        self._publish(
            path,
            {
                "format": INDEX_FORMAT,
                "tenant": self.tenant,
                "commit": head,
                "embedder": embedder.embedder_id(),
                "count": len(items),
                "next_label": len(items),
                "vectors": vec,
                "late": late,
            },
            cancel,
        )
        return SyncReport(self.tenant, head, "full", len(metas), len(items), 0)

    def _build_incremental(
        self,
        gen: Generation,
        head: str,
        progress: Callable[[int, int], None] | None,
        cancel: threading.Event | None = None,
    ) -> SyncReport:
        changes = self.kb.changed_paths(gen.commit or "", head, self.store.prefix.rstrip("/"))
        removed_paths, added_paths = set(), set()
        for status, old, new in changes:
            if status in ("M", "D", "T"):
                removed_paths.add(old)
            if status in ("A", "M", "T", "C"):
                added_paths.add(new or old)
            if status == "R":
                removed_paths.add(old)
                added_paths.add(new or old)
        removed_paths = {p for p in removed_paths if self.store.page_id_of(p)}
        added_paths = {p for p in added_paths if self.store.page_id_of(p)}
        meta = json.loads(json.dumps(gen.meta))
        vec = meta["vectors"]
        searcher = gen.searcher()
        dropped_docs = [doc for p in sorted(removed_paths) for doc in searcher.documents(path=p)]
        dropped = [int(doc["label"]) for doc in dropped_docs]
        items, metas = self._intervals_at(head, sorted(added_paths))
        emb, counts, pieces = self._embed_reusing(gen, dropped_docs, items, progress)
        first = int(meta["next_label"])
        new_labels = vector_labels(np.arange(first, first + len(items)), counts)

        # Vectors: the new ones join the delta; dropped intervals' leave it, or die in the base.
        delta_labels, delta_vectors, dead = gen.delta()
        dropped_arr = np.asarray(dropped, dtype=np.int64)
        owners = delta_labels // VECTOR_STRIDE
        in_delta = np.isin(dropped_arr, owners)
        keep = ~np.isin(owners, dropped_arr)
        delta_labels = np.concatenate([delta_labels[keep], new_labels])
        delta_vectors = np.vstack([delta_vectors[keep], emb.astype(np.float32)])
        dead = np.union1d(dead, dropped_arr[~in_delta])

        path = self._new_dir(head)
        (path / "whoosh").mkdir()
        for f in (gen.path / "whoosh").iterdir():
            if not f.name.endswith("LOCK"):
                _link(f, path / "whoosh" / f.name)
        ix = whoosh_index.open_dir(str(path / "whoosh"))
        writer = ix.writer(procs=1, limitmb=128, codec=make_codec())
        try:
            for p in sorted(removed_paths):
                writer.delete_by_term("path", p)
            for n, item in enumerate(items):
                writer.add_document(**self._doc(item, first + n, metas))
            writer.commit(mergetype=merge_policy)
        except BaseException:
            writer.cancel()
            raise
        count = ix.doc_count()
        ix.close()
        meta["late"] = self._next_pieces(gen, path, dropped_arr, first, pieces)

        base_count = int(vec["base_count"])
        if len(delta_labels) + len(dead) > max(DELTA_MAX, DELTA_SHARE * base_count):
            vec.update(self._fold_delta(gen, path, delta_labels, delta_vectors, dead))
            delta_labels = np.zeros(0, np.int64)
            dead = np.zeros(0, np.int64)
        elif base_count:
            _link(gen.path / "vectors.hnsw", path / "vectors.hnsw")
        if len(delta_labels) or len(dead):
            save_delta(path / "delta.npz", delta_labels, delta_vectors, dead)
        vec.update({"delta": len(delta_labels), "dead": len(dead)})
        meta.update({"commit": head, "count": count, "next_label": first + len(items)})
        self._publish(path, meta, cancel)
        return SyncReport(
            self.tenant,
            head,
            "incremental",
            len(removed_paths | added_paths),
            len(items),
            len(dropped),
        )

    def _next_pieces(
        self,
        gen: Generation,
        path: Path,
        dropped: np.ndarray,
        first: int,
        pieces: list[np.ndarray],
    ) -> dict[str, int]:
        """The word-piece tables of the generation after ``gen``, written to ``path``: the
        base shared by hard link and the delta rewritten with the new intervals (labels from
        ``first``), or, once the delta outgrows LATE_DELTA_MAX intervals or DELTA_SHARE of
        the base, one new base of the live intervals. Returns the meta's counts."""
        base, delta = gen.pieces()
        kept, kept_pieces = delta.without(dropped)
        labels = kept + list(range(first, first + len(pieces)))
        if len(labels) > max(LATE_DELTA_MAX, DELTA_SHARE * len(base)):
            live = gen.view().live_label_set() - set(dropped.tolist())
            base_kept, base_pieces = base.without(
                np.array([x for x in base.labels.tolist() if x not in live], dtype=np.int64)
            )
            PieceTable.of(base_kept + labels, base_pieces + kept_pieces + pieces).save(
                path / LATE_FILE
            )
            return {"base": len(base_kept) + len(labels), "delta": 0}
        if len(base):
            _link(gen.path / LATE_FILE, path / LATE_FILE)
        if labels:
            PieceTable.of(labels, kept_pieces + pieces).save(path / LATE_DELTA_FILE)
        return {"base": len(base), "delta": len(labels)}

    def _embed_reusing(
        self,
        gen: Generation,
        dropped_docs: list[dict[str, Any]],
        items: list[IntervalText],
        progress: Callable[[int, int], None] | None,
    ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """Vectors for ``items`` (as ``_embed``), embedding only texts that the dropped
        intervals did not already have: an edited page (a growing chat above all) keeps most
        of its turns, and re-embedding them made a one-turn change cost the whole page."""
        known: dict[str, np.ndarray] = {}
        known_pieces: dict[str, np.ndarray] = {}
        if dropped_docs:
            for doc in dropped_docs:
                found = gen.pieces_of(int(doc["label"]))
                if found is not None:
                    known_pieces[doc["content"]] = found
            delta_labels, delta_vectors, _dead = gen.delta()
            in_delta = {int(label): i for i, label in enumerate(delta_labels)}
            base = gen.base()
            for doc in dropped_docs:
                texts = vector_texts(doc["content"], doc.get("speaker") or "")
                labels = vector_labels([int(doc["label"])], [len(texts)]).tolist()
                if all(label in in_delta for label in labels):
                    rows = delta_vectors[[in_delta[label] for label in labels]]
                elif base is not None:
                    try:
                        rows = np.asarray(base.get_items(labels), dtype=np.float32)
                    except RuntimeError:  # a label hnswlib no longer holds
                        continue
                else:
                    continue
                known.update(zip(texts, rows, strict=True))
        texts = [vector_texts(it.text, it.speaker) for it in items]
        counts = np.array([len(t) for t in texts], dtype=np.int64)
        flat = [t for ts in texts for t in ts]
        wholes = [ts[0] for ts in texts]
        fresh = list(
            dict.fromkeys(
                [t for t in flat if t not in known] + [t for t in wholes if t not in known_pieces]
            )
        )
        vectors, _counts, fresh_pieces = self._embed([[t] for t in fresh], progress)
        known.update(zip(fresh, vectors, strict=True))
        known_pieces.update(zip(fresh, fresh_pieces, strict=True))
        pieces = [known_pieces[t] for t in wholes]
        if not flat:
            return np.zeros((0, embedder.DIM), np.float32), counts, pieces
        return np.vstack([known[t] for t in flat]).astype(np.float32), counts, pieces

    def _fold_delta(
        self,
        gen: Generation,
        path: Path,
        labels: np.ndarray,
        vectors: np.ndarray,
        dead: np.ndarray,
    ) -> dict[str, Any]:
        """A new base graph: the old one (a private copy) with the dead marked deleted and
        the delta added into free or deleted slots."""
        vec = gen.meta["vectors"]
        index = load_vectors(gen.path / "vectors.hnsw", gen.meta)
        marked = int(vec.get("marked_deleted", 0))
        for owner in dead.tolist():  # an interval's vectors: its text, then its sentences
            for j in range(VECTOR_STRIDE):
                try:
                    index.mark_deleted(int(owner) * VECTOR_STRIDE + j)
                except RuntimeError:  # no such vector (or already gone)
                    break
                marked += 1
        if len(labels):
            reusable = min(marked, len(labels))
            fresh = len(labels) - reusable
            needed = index.get_current_count() + fresh
            if needed > index.get_max_elements():
                index.resize_index(int(needed * 1.25) + 16)
            index.add_items(vectors, labels, replace_deleted=True)
            marked -= reusable
        out = save_base(index, path / "vectors.hnsw")
        out["marked_deleted"] = max(0, marked)
        return out

    # -- searching --------------------------------------------------------------------------

    def _hit(self, doc: dict[str, Any], score: float, retriever: str) -> Hit:
        if doc.get("tenant") != self.tenant:
            # The index's meta names this tenant, so this is a damaged or tampered index: the
            # read fails and the index is rebuilt, rather than leak another tenant's text.
            raise StorageError(
                f"the index of tenant {self.tenant!r} holds an interval of {doc.get('tenant')!r}"
            )
        iv = Interval(
            doc["page"],
            doc["path"],
            int(doc["start"]),
            int(doc["end"]),
            doc.get("commit", ""),
            doc.get("blob", ""),
            doc.get("kind", ""),
            tuple(doc.get("turns") or ()),
        )
        return Hit(
            doc["page"],
            doc.get("session", ""),
            self.tenant,
            iv,
            float(score),
            retriever,
            _excerpt(doc.get("content", "")),
            doc.get("speaker", ""),
            doc.get("timestamp", ""),
        )

    @staticmethod
    def _term_postings(
        leaves: list[tuple[SegmentReader, int]], fieldname: str, term: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """Global document numbers and weights of a term across all segments."""
        ids, weights = [], []
        for leaf, offset in leaves:
            leaf_ids, leaf_weights = cached_postings(leaf, fieldname, term)
            ids.append(leaf_ids.astype(np.int64) + offset)
            weights.append(leaf_weights)
        if not ids:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        return np.concatenate(ids), np.concatenate(weights).astype(np.float64)

    def _allowed_docs(self, gen: Generation, flt: dict[str, str]) -> np.ndarray | None:
        """Global document numbers (live) that pass every filter, or None for no filter."""
        if not flt:
            return None
        view = gen.view()
        allowed: np.ndarray | None = None
        leaves = segment_leaves(gen.searcher().reader())
        for name, value in flt.items():
            found = self._term_postings(leaves, name, value)[0]
            allowed = found if allowed is None else np.intersect1d(allowed, found)
        assert allowed is not None
        return allowed[view.live[allowed]]

    def _ranked(
        self, gen: Generation, docs: np.ndarray, scores: np.ndarray, k: int, retriever: str
    ) -> list[Hit]:
        """The best ``k`` documents by score; ties broken by interval key, so that equal
        scores come out in the same order however the index was built."""
        if len(docs) == 0:
            return []
        if len(docs) > k:
            cut = np.partition(scores, len(scores) - k)[len(scores) - k]
            pick = np.flatnonzero(scores >= cut)
            if len(pick) > k + 256:  # a huge tie: keep the best-scored, then any
                pick = pick[np.argsort(-scores[pick], kind="stable")[: k + 256]]
            docs, scores = docs[pick], scores[pick]
        searcher = gen.searcher()
        found = [
            (float(s), searcher.stored_fields(int(d))) for d, s in zip(docs, scores, strict=True)
        ]
        found.sort(key=lambda item: (-item[0], item[1]["key"]))
        return [self._hit(doc, s, retriever) for s, doc in found[:k]]

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
            gen.view().pages()
            reader = gen.searcher().reader()
            first = next(iter(reader.lexicon("text")), None)
            if first is not None:
                term = first.decode("utf-8") if isinstance(first, bytes) else str(first)
                self._bm25(gen, [term], 1, {})
            gen.base()
            gen.delta()

        self._guarded(read, cancel)

    def bm25(self, query: str, k: int = 10, filters: dict[str, Any] | None = None) -> list[Hit]:
        query, k = check_query(query, k)
        flt = check_filters(filters)
        terms = analyze(query)
        if not terms:
            return []
        return self._guarded(lambda gen: self._bm25(gen, [gen.spelled(t) for t in terms], k, flt))

    def _bm25(self, gen: Generation, terms: list[str], k: int, flt: dict[str, str]) -> list[Hit]:
        if gen.count == 0:
            return []
        view = gen.view()
        allowed = self._allowed_docs(gen, flt)
        if allowed is not None and len(allowed) == 0:
            return []
        leaves = segment_leaves(gen.searcher().reader())
        scores = np.zeros(len(view.live), dtype=np.float64)
        n_live = view.n_live
        for term in terms:
            ids, weights = self._term_postings(leaves, "text", term)
            live = view.live[ids]
            ids, weights = ids[live], weights[live]
            if len(ids) == 0:
                continue
            idf = math.log(n_live / (len(ids) + 1)) + 1.0
            norm = BM25_K1 * ((1 - BM25_B) + BM25_B * view.lengths[ids] / view.avg_length)
            scores[ids] += idf * (weights * (BM25_K1 + 1)) / (weights + norm)
        docs = np.flatnonzero(scores > 0) if allowed is None else allowed[scores[allowed] > 0]
        return self._ranked(gen, docs, scores[docs], k, "bm25")

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
        return self._guarded(
            lambda gen: self._bm25_pages(gen, [gen.spelled(t) for t in terms], k, flt)
        )

    def _bm25_pages(
        self, gen: Generation, terms: list[str], k: int, flt: dict[str, str]
    ) -> list[tuple[str, float]]:
        if gen.count == 0:
            return []
        view = gen.view()
        names, page_of, lengths = view.pages()
        allowed = self._allowed_docs(gen, flt)
        keep = view.live.copy() if allowed is None else np.zeros(len(view.live), dtype=bool)
        if allowed is not None:
            keep[allowed] = True
        n_pages = int(np.count_nonzero(lengths))
        avg = float(lengths.sum() / n_pages) if n_pages else 1.0
        leaves = segment_leaves(gen.searcher().reader())
        scores = np.zeros(len(names), dtype=np.float64)
        for term in terms:
            ids, weights = self._term_postings(leaves, "text", term)
            ok = keep[ids] & (page_of[ids] >= 0)
            if not ok.any():
                continue
            tf = np.bincount(page_of[ids[ok]], weights=weights[ok], minlength=len(names))
            has = tf > 0
            idf = page_idf(n_pages, int(has.sum()))
            norm = BM25_K1 * ((1 - BM25_B) + BM25_B * lengths[has] / (avg or 1.0))
            scores[has] += idf * (tf[has] * (BM25_K1 + 1)) / (tf[has] + norm)
        order = np.flatnonzero(scores > 0)
        ranked = sorted(((names[i], float(scores[i])) for i in order), key=lambda x: (-x[1], x[0]))
        return ranked[:k]

    def dense(
        self,
        query: str,
        k: int = 10,
        filters: dict[str, Any] | None = None,
        vector: np.ndarray | None = None,
    ) -> list[Hit]:
        query, k = check_query(query, k)
        flt = check_filters(filters)
        if vector is None and not analyze(query):
            return []  # only stop words or punctuation: nothing to look for
        return self._guarded(lambda gen: self._dense(gen, query, k, flt, vector))

    def _dense(
        self,
        gen: Generation,
        query: str,
        k: int,
        flt: dict[str, str],
        vector: np.ndarray | None,
    ) -> list[Hit]:
        if gen.count == 0:
            return []
        view = gen.view()
        allowed = self._allowed_docs(gen, flt)
        if allowed is not None and len(allowed) == 0:
            return []
        base = gen.base()
        delta_labels, delta_vectors, dead = gen.delta()
        vec = (
            read_query(query).vector
            if vector is None
            else np.asarray(vector, dtype=np.float32).reshape(-1)
        )
        labels: list[np.ndarray] = []
        sims: list[np.ndarray] = []
        # The delta: exact.
        delta_owners = delta_labels // VECTOR_STRIDE
        if len(delta_labels):
            ok = view.docs_of(delta_owners) >= 0
            if allowed is not None:
                allowed_labels = view.labels[allowed]
                ok &= np.isin(delta_owners, allowed_labels)
            labels.append(delta_labels[ok])
            sims.append(delta_vectors[ok] @ vec)
        # The base graph: approximate, or exact over a small filtered set.
        if base is not None:
            live = view.live_label_set()

            def alive(label: int) -> bool:
                return label // VECTOR_STRIDE in live

            if allowed is not None:
                wanted = view.labels[allowed]
                wanted = wanted[~np.isin(wanted, delta_owners)]
                if len(wanted) <= EXACT_MAX:
                    if len(wanted):
                        key = tuple(sorted(flt.items()))
                        found_labels, items = gen.vectors_of(key, wanted, base)
                        labels.append(found_labels)
                        sims.append(items @ vec)
                else:
                    wanted_set = set(wanted.tolist())
                    found = GraphSearch(
                        base, lambda label: label // VECTOR_STRIDE in wanted_set, alive
                    ).intervals(vec, k)
                    labels.append(found[0])
                    sims.append(found[1])
            elif view.n_live > len(np.unique(delta_owners)):
                check = alive if len(dead) else None
                found = GraphSearch(base, check, alive).intervals(vec, k)
                labels.append(found[0])
                sims.append(found[1])
        if not labels:
            return []
        all_labels = np.concatenate(labels)
        all_sims = np.concatenate(sims).astype(np.float64)
        docs = view.docs_of(all_labels // VECTOR_STRIDE)
        keep = docs >= 0
        docs, all_sims = docs[keep], all_sims[keep]
        # An interval scores as its nearest vector (its whole text or one of its sentences).
        order = np.argsort(-all_sims, kind="stable")
        docs, all_sims = docs[order], all_sims[order]
        _unique, first = np.unique(docs, return_index=True)
        return self._ranked(gen, docs[first], all_sims[first], k, "dense")

    def late(self, query: str, k: int = 10, filters: dict[str, Any] | None = None) -> list[Hit]:
        """The ``k`` intervals that late interaction (kbmem.index.late) ranks best for ``query``:
        exact, over every live interval that passes the filters."""
        query, k = check_query(query, k)
        flt = check_filters(filters)
        if not analyze(query):
            return []  # only stop words or punctuation: nothing to look for
        return self._guarded(lambda gen: self._late(gen, query, k, flt))

    def _late(self, gen: Generation, query: str, k: int, flt: dict[str, str]) -> list[Hit]:
        if gen.count == 0:
            return []
        allowed = self._allowed_docs(gen, flt)
        if allowed is not None and len(allowed) == 0:
            return []
        wanted = query_pieces(query)
        if not len(wanted):
            return []
        view = gen.view()
        base, delta = gen.pieces()
        if allowed is None:
            labels = np.concatenate([base.labels, delta.labels])
            scores = np.concatenate([base.scores(wanted), delta.scores(wanted)])
        else:  # (a label is in one table or the other: the other scores it 0)
            labels = np.sort(view.labels[allowed])
            scores = base.scores(wanted, labels) + delta.scores(wanted, labels)
        docs = view.docs_of(labels)  # -1 for an interval that died since the base was made
        keep = (docs >= 0) & (scores > 0)
        return self._ranked(gen, docs[keep], scores[keep].astype(np.float64), k, "late")

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
