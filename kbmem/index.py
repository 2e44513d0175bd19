"""Per-tenant hybrid indexes (Whoosh BM25 + hnswlib vectors), derived from commits.

Layout under ``.kbmem/index/<tenant>/``::

    CURRENT            name of the generation readers use (replaced atomically)
    gen-<id>/          meta.json, whoosh/ (BM25 + the interval table), vectors.hnsw
    sync.lock          one syncing process at a time

A sync builds a new generation beside the live one and swaps ``CURRENT`` at the end, so a
reader always sees a consistent index of some commit; a sync killed half-way leaves the old
generation serving and a stray folder that the next sync removes. An incremental sync starts
from hard links of the live generation's Whoosh files (Whoosh never rewrites a file in place)
and applies only the pages that ``git diff`` names.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hnswlib
import numpy as np
from whoosh import index as whoosh_index
from whoosh.analysis import StemmingAnalyzer
from whoosh.fields import ID, KEYWORD, NUMERIC, STORED, TEXT, Schema
from whoosh.query import And, Or, Term
from whoosh.reading import SegmentReader
from whoosh.scoring import BM25F

from . import embedder
from .errors import StorageError, ValidationError
from .ids import check_tenant
from .intervals import Interval, IntervalText, cut_page
from .pages import parse_page
from .pagestore import PageStore
from .store import KnowledgeBase, atomic_write

log = logging.getLogger("kbmem")

INDEX_FORMAT = 1
SEGMENT_DOCS = 2000
MAX_K = 1000
MAX_QUERY_TERMS = 256
ANALYZER = StemmingAnalyzer()
FILTER_FIELDS = ("session", "page", "tags", "classification", "kind")


def make_schema() -> Schema:
    return Schema(
        key=ID(stored=True, unique=True),
        label=NUMERIC(stored=True, numtype=int, bits=64),
        session=ID(stored=True),
        page=ID(stored=True),
        path=ID(stored=True),
        kind=ID(stored=True),
        tags=KEYWORD(stored=True, commas=True, lowercase=True),
        classification=ID(stored=True),
        start=STORED,
        end=STORED,
        commit=STORED,
        blob=STORED,
        turns=STORED,
        speaker=STORED,
        timestamp=STORED,
        content=STORED,
        text=TEXT(analyzer=ANALYZER),
    )


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
    out = {}
    for name, value in (filters or {}).items():
        if name not in FILTER_FIELDS:
            raise ValidationError(
                f"unknown filter (known: {', '.join(FILTER_FIELDS)})", f"filters.{name}"
            )
        if not isinstance(value, str) or not value:
            raise ValidationError("must be non-empty text", f"filters.{name}")
        out[name] = value.lower() if name == "tags" else value
    return out


def _merge_deleted_and_small(writer: Any, segments: list[Any]) -> list[Any]:
    """Whoosh merge policy: rewrite only segments that hold deletions (so that BM25 statistics
    equal a fresh build's) and fold small segments together; big clean segments stay."""
    keep, small = [], []
    for segment in segments:
        if segment.has_deletions():
            reader = SegmentReader(writer.storage, writer.schema, segment)
            writer.add_reader(reader)
            reader.close()
        elif segment.doc_count_all() < SEGMENT_DOCS // 4:
            small.append(segment)
        else:
            keep.append(segment)
    if len(small) > 1:
        for segment in small:
            reader = SegmentReader(writer.storage, writer.schema, segment)
            writer.add_reader(reader)
            reader.close()
    else:
        keep += small
    return keep


class Generation:
    """One immutable, openable index generation."""

    def __init__(self, path: Path):
        self.path = path
        self.name = path.name
        try:
            self.meta = json.loads((path / "meta.json").read_text())
            if self.meta.get("format") != INDEX_FORMAT:
                raise StorageError(f"index format {self.meta.get('format')} is not {INDEX_FORMAT}")
            self.ix = whoosh_index.open_dir(str(path / "whoosh"), readonly=True)
            doc_count = self.ix.doc_count()
        except StorageError:
            raise
        except Exception as exc:
            raise StorageError(f"index {path} cannot be opened: {exc}") from exc
        if doc_count != self.meta.get("count"):
            raise StorageError(
                f"index {path} holds {doc_count} intervals, meta says {self.meta.get('count')}"
            )
        self._local = threading.local()
        self._vectors: hnswlib.Index | None = None
        self._vectors_lock = threading.Lock()

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
            s = self.ix.searcher(weighting=BM25F(B=0.75, K1=1.2))
            self._local.searcher = s
        return s

    def vectors(self) -> hnswlib.Index:
        with self._vectors_lock:
            if self._vectors is None:
                self._vectors = load_vectors(self.path / "vectors.hnsw", self.meta)
            return self._vectors

    def close(self) -> None:
        s = getattr(self._local, "searcher", None)
        if s is not None:
            s.close()


def load_vectors(path: Path, meta: dict[str, Any]) -> hnswlib.Index:
    index = hnswlib.Index(space="cosine", dim=embedder.DIM)
    capacity = int(meta.get("capacity", 0))
    if meta.get("vectors", 0) == 0:
        index.init_index(max_elements=max(capacity, 16), ef_construction=200, M=16)
    else:
        try:
            index.load_index(str(path), max_elements=max(capacity, 16))
        except Exception as exc:
            raise StorageError(f"vector index {path} cannot be read: {exc}") from exc
        if index.get_current_count() != meta.get("vectors"):
            raise StorageError(f"vector index {path} does not match its meta")
    index.set_ef(64)
    return index


@contextmanager
def _flock(path: Path, timeout: float) -> Any:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.02)
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class TenantIndex:
    """The hybrid index of one tenant. Thread-safe for readers within a process."""

    def __init__(self, kb: KnowledgeBase, tenant: str):
        self.kb = kb
        self.tenant = check_tenant(tenant)
        self.store = PageStore(kb, tenant)
        self.dir = kb.state_dir / "index" / self.tenant
        self.dir.mkdir(parents=True, exist_ok=True)
        self._gen: Generation | None = None
        self._lock = threading.RLock()

    # -- generations ------------------------------------------------------------------------

    def _current_name(self) -> str | None:
        try:
            return (self.dir / "CURRENT").read_text().strip() or None
        except FileNotFoundError:
            return None

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
        except StorageError as exc:
            return None, f"the index is corrupt ({exc})"
        if gen is None:
            return None, "there is no index yet"
        if gen.meta.get("embedder") != embedder.embedder_id():
            return None, (f"the index was built with another embedder ({gen.meta.get('embedder')})")
        if gen.meta.get("tenant") != self.tenant:
            return None, "the index belongs to another tenant"
        return gen, ""

    def ensure_synced(self, progress: Callable[[int, int], None] | None = None) -> Generation:
        """The current generation, synced first if HEAD moved (a cheap check when it did not).
        If another process is syncing right now, serve the current generation."""
        head = self.kb.head()
        gen, _problem = self._usable_current()
        if gen is not None and gen.commit == head:
            return gen
        self.sync(progress=progress, wait=gen is None)
        gen, problem = self._usable_current()
        if gen is None:
            raise StorageError(f"no usable index for tenant {self.tenant}: {problem}")
        return gen

    def sync(
        self,
        full: bool = False,
        progress: Callable[[int, int], None] | None = None,
        wait: bool = True,
    ) -> SyncReport:
        """Bring the index to HEAD: incrementally when possible, from scratch when asked or
        when the live index is missing, foreign or corrupt."""
        started = time.perf_counter()
        with _flock(self.dir / "sync.lock", 600 if wait else 0.5) as got:
            if not got:
                return SyncReport(self.tenant, None, "none", reason="another process is syncing")
            head = self.kb.head()
            gen, problem = self._usable_current()
            if gen is not None and gen.commit == head and not full:
                return SyncReport(self.tenant, head, "none", reason="up to date")
            if problem and problem != "there is no index yet":
                log.warning("tenant %s: %s; rebuilding it from scratch", self.tenant, problem)
            if full or gen is None or gen.commit is None or head is None:
                report = self._build_full(head, progress)
                report.reason = "asked for a full rebuild" if full else problem
            else:
                try:
                    report = self._build_incremental(gen, head, progress)
                except Exception as exc:  # a damaged live index shows up here: start over
                    log.warning(
                        "tenant %s: incremental sync failed (%s); rebuilding", self.tenant, exc
                    )
                    report = self._build_full(head, progress)
            self._collect_garbage()
        report.seconds = time.perf_counter() - started
        return report

    def _new_dir(self, head: str | None) -> Path:
        path = self.dir / f"gen-{(head or 'empty')[:12]}-{uuid.uuid4().hex[:8]}"
        path.mkdir()
        return path

    def _publish(self, path: Path, meta: dict[str, Any]) -> None:
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

    def _intervals_at(self, commit: str, paths: Iterable[str] | None = None) -> list[IntervalText]:
        """Intervals of every page (or of ``paths``) at ``commit``; broken pages are skipped."""
        out: list[IntervalText] = []
        if paths is None:
            for record in self.store.iter_pages(commit):
                out += cut_page(record.page, record.page_id, record.path, commit, record.blob)
            return out
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
            out += cut_page(page, page_id, path, commit, blob)
        return out

    def _doc(self, item: IntervalText, label: int, meta_of: dict[str, dict[str, Any]]) -> dict:
        iv = item.interval
        page_meta = meta_of.get(iv.page_id, {})
        return {
            "key": iv.key,
            "label": label,
            "session": str(page_meta.get("session_id") or ""),
            "page": iv.page_id,
            "path": iv.path,
            "kind": iv.kind,
            "tags": ",".join(str(t) for t in page_meta.get("tags") or []),
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

    def _page_meta(self, items: list[IntervalText], commit: str) -> dict[str, dict[str, Any]]:
        metas: dict[str, dict[str, Any]] = {}
        for item in items:
            pid = item.interval.page_id
            if pid not in metas:
                try:
                    metas[pid] = self.store.read(pid, commit).page.meta
                except Exception:
                    metas[pid] = {}
        return metas

    def _embed(
        self,
        items: list[IntervalText],
        progress: Callable[[int, int], None] | None,
        done: int = 0,
        total: int = 0,
    ) -> np.ndarray:
        chunks = []
        step = 256
        for i in range(0, len(items), step):
            chunks.append(embedder.embed([it.text for it in items[i : i + step]]))
            if progress:
                progress(done + min(i + step, len(items)), total or len(items))
        return np.vstack(chunks) if chunks else np.zeros((0, embedder.DIM), np.float32)

    def _write_docs(self, ix: Any, docs: list[dict], deletions: list[str]) -> None:
        writer = ix.writer(procs=1, limitmb=128)
        try:
            for path in deletions:
                writer.delete_by_term("path", path)
            for doc in docs:
                writer.add_document(**doc)
            writer.commit(mergetype=_merge_deleted_and_small)
        except BaseException:
            writer.cancel()
            raise

    def _build_full(
        self, head: str | None, progress: Callable[[int, int], None] | None
    ) -> SyncReport:
        path = self._new_dir(head)
        (path / "whoosh").mkdir()
        ix = whoosh_index.create_in(str(path / "whoosh"), make_schema())
        items = self._intervals_at(head) if head else []
        metas = self._page_meta(items, head) if head else {}
        vectors = hnswlib.Index(space="cosine", dim=embedder.DIM)
        capacity = max(16, int(len(items) * 1.25))
        vectors.init_index(max_elements=capacity, ef_construction=200, M=16)
        for i in range(0, len(items), SEGMENT_DOCS):
            chunk = items[i : i + SEGMENT_DOCS]
            emb = self._embed(chunk, progress, i, len(items))
            vectors.add_items(emb, np.arange(i, i + len(chunk)))
            self._write_docs(ix, [self._doc(it, i + n, metas) for n, it in enumerate(chunk)], [])
        if items:
            vectors.save_index(str(path / "vectors.hnsw"))
        ix.close()
        self._publish(
            path,
            {
                "format": INDEX_FORMAT,
                "tenant": self.tenant,
                "commit": head,
                "embedder": embedder.embedder_id(),
                "count": len(items),
                "vectors": len(items),
                "capacity": capacity,
                "next_label": len(items),
                "deleted": 0,
            },
        )
        return SyncReport(self.tenant, head, "full", len(metas), len(items), 0)

    def _build_incremental(
        self, gen: Generation, head: str, progress: Callable[[int, int], None] | None
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
        path = self._new_dir(head)
        (path / "whoosh").mkdir()
        for f in (gen.path / "whoosh").iterdir():
            if not f.name.endswith("LOCK"):
                os.link(f, path / "whoosh" / f.name)
        meta = dict(gen.meta)
        vectors = load_vectors(gen.path / "vectors.hnsw", meta)
        searcher = gen.searcher()
        dropped = []
        for p in sorted(removed_paths):
            for doc in searcher.documents(path=p):
                dropped.append(int(doc["label"]))
        for label in dropped:
            vectors.mark_deleted(label)
        items = self._intervals_at(head, sorted(added_paths))
        metas = self._page_meta(items, head)
        first = int(meta["next_label"])
        emb = self._embed(items, progress)
        if items:
            needed = vectors.get_current_count() + len(items)
            if needed > vectors.get_max_elements():
                vectors.resize_index(int(needed * 1.5))
            vectors.add_items(emb, np.arange(first, first + len(items)))
        ix = whoosh_index.open_dir(str(path / "whoosh"))
        self._write_docs(
            ix,
            [self._doc(it, first + n, metas) for n, it in enumerate(items)],
            sorted(removed_paths),
        )
        count = ix.doc_count()
        ix.close()
        if vectors.get_current_count():
            vectors.save_index(str(path / "vectors.hnsw"))
        meta.update(
            {
                "commit": head,
                "count": count,
                "vectors": vectors.get_current_count(),
                "capacity": vectors.get_max_elements(),
                "next_label": first + len(items),
                "deleted": int(meta.get("deleted", 0)) + len(dropped),
            }
        )
        self._publish(path, meta)
        return SyncReport(
            self.tenant,
            head,
            "incremental",
            len(removed_paths | added_paths),
            len(items),
            len(dropped),
        )

    # -- searching --------------------------------------------------------------------------

    def _hit(self, doc: dict[str, Any], score: float, retriever: str) -> Hit:
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
            doc.get("content", ""),
            doc.get("speaker", ""),
            doc.get("timestamp", ""),
        )

    def _filter_query(self, filters: dict[str, str]) -> Any:
        terms = [Term(name, value) for name, value in filters.items()]
        return And(terms) if len(terms) > 1 else (terms[0] if terms else None)

    def bm25(self, query: str, k: int = 10, filters: dict[str, Any] | None = None) -> list[Hit]:
        query, k = check_query(query, k)
        flt = check_filters(filters)
        gen = self.ensure_synced()
        terms = analyze(query)
        if not terms or gen.count == 0:
            return []
        q = Or([Term("text", t) for t in terms])
        results = gen.searcher().search(q, limit=k, filter=self._filter_query(flt))
        return [self._hit(r.fields(), r.score, "bm25") for r in results]

    def dense(
        self,
        query: str,
        k: int = 10,
        filters: dict[str, Any] | None = None,
        vector: np.ndarray | None = None,
    ) -> list[Hit]:
        query, k = check_query(query, k)
        flt = check_filters(filters)
        gen = self.ensure_synced()
        vectors = gen.vectors()
        live = vectors.get_current_count() - int(gen.meta.get("deleted", 0))
        if live <= 0:
            return []
        vec = embedder.embed([query]) if vector is None else vector.reshape(1, -1)
        searcher = gen.searcher()
        allowed: Callable[[int], bool] | None = None
        want = min(k, live)
        if flt:
            labels = {
                int(searcher.stored_fields(n)["label"])
                for n in searcher.docs_for_query(self._filter_query(flt))
            }
            if not labels:
                return []
            allowed = labels.__contains__
            want = min(k, len(labels))
        vectors.set_ef(max(64, want * 2))
        labels_out, distances = vectors.knn_query(vec, k=want, filter=allowed)
        hits = []
        for label, distance in zip(labels_out[0], distances[0], strict=True):
            doc = searcher.document(label=int(label))
            if doc is not None:
                hits.append(self._hit(doc, 1.0 - float(distance), "dense"))
        return hits

    def intervals_of(self, page_id: str) -> list[Hit]:
        """Every indexed interval of one page, in line order (score 0)."""
        gen = self.ensure_synced()
        docs = list(gen.searcher().documents(page=page_id))
        return sorted((self._hit(d, 0.0, "page") for d in docs), key=lambda h: h.interval.start)
