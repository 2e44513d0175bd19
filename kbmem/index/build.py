"""Building a generation of a tenant's index from a commit: in full, or incrementally from the
live generation.

An incremental build costs what changed, not the size of the index: it starts from hard links
of the live generation's files (Whoosh never rewrites a file in place, and the vector graph is
never written in place either), applies only the pages that ``git diff`` names to Whoosh, and
keeps the new intervals' vectors in a delta beside the base graph (kbmem.index.deltas)."""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kbmem import heap
from kbmem.errors import StorageError, ValidationError
from kbmem.index import ann, embedder
from kbmem.index.build_vectors import embed_reusing
from kbmem.index.checkpoint import EmbedCheckpoints
from kbmem.index.deltas import (
    fold_delta,
    next_delta,
    next_pieces,
    next_segments,
    should_fold,
    whole_delta,
)
from kbmem.index.generation import INDEX_FORMAT, Generation
from kbmem.index.intervals import IntervalText, cut_page
from kbmem.index.late import LATE_FILE, QuantizedChunk, TableWriter
from kbmem.index.layout import Layout, link, stop_if_cancelled
from kbmem.index.postings import create_whoosh, live_count, make_codec, merge_policy, open_whoosh
from kbmem.index.vectors import (
    HNSW_EF_CONSTRUCTION,
    HNSW_M,
    keep_base,
    save_base,
    vector_labels,
    vector_texts,
)
from kbmem.store.pages import parse_page
from kbmem.store.pagestore import PageStore
from kbmem.store.repository import KnowledgeBase

log = logging.getLogger("kbmem")

# -- a full build -------------------------------------------------------------------------------
# Intervals read, embedded and indexed per step of a full build (and per progress report); up
# to four steps are held at once (one read, two waiting, one being indexed).
SEGMENT_DOCS = 1000
CAPACITY_GROWTH = 1.25  # room in a new vector graph for later folds, over the vectors it holds
MIN_CAPACITY = 16
# Whoosh's indexing memory for a full build (one segment, one writer): its own estimate of its
# postings, which Python objects exceed by about half. Beyond it, sorted runs go to disk and
# are merged at the commit; 256 MB of them was a quarter of a 10,000-page build's memory, and
# a 64 MB pool put 43 MB more on its peak than 32 MB (in the same wall time).
FULL_WRITER_MB = 32
INCREMENTAL_WRITER_MB = 128  # ...and for an incremental one (a few pages)

Progress = Callable[[int, int], None]
# One step of a full build: its intervals and the headers of their pages...
Step = tuple[list[IntervalText], dict[str, dict[str, Any]]]
# ...and as it waits for the indexing thread: its first label, intervals, headers, vectors,
# vectors per interval and word pieces.
Chunk = tuple[
    int, list[IntervalText], dict[str, dict[str, Any]], np.ndarray, np.ndarray, QuantizedChunk
]


@dataclass
class SyncReport:
    """What one sync did: nothing, a full build or an incremental one, and how much changed."""

    tenant: str
    commit: str | None
    mode: str  # none | full | incremental
    pages_changed: int = 0
    intervals_added: int = 0
    intervals_removed: int = 0
    seconds: float = 0.0
    reason: str = ""


def reporting(
    progress: Progress | None,
    cancel: threading.Event | None,
    failed: list[BaseException],
    tenant: str,
) -> Progress:
    """``progress`` (if any), first raising Cancelled when ``cancel`` is set, and noting in
    ``failed`` an exception either raises (which still propagates): a build checks both
    after every step."""

    def report(done: int, total: int) -> None:
        try:
            stop_if_cancelled(cancel, tenant)
            if progress is not None:
                progress(done, total)
        except BaseException as exc:
            failed.append(exc)
            raise

    return report


class Builder:
    """Builds and publishes the generations of one tenant's index."""

    def __init__(self, kb: KnowledgeBase, store: PageStore, layout: Layout):
        self.kb = kb
        self.store = store
        self.layout = layout
        self.tenant = layout.tenant
        # Finished chunks of the embedding, kept until a build publishes: a killed build
        # resumes from them (kbmem.index.checkpoint).
        self.checkpoints = EmbedCheckpoints(layout.dir)

    def intervals_at(
        self, commit: str, paths: Iterable[str]
    ) -> tuple[list[IntervalText], dict[str, dict[str, Any]]]:
        """Intervals of the pages ``paths`` at ``commit`` and each page's header; broken
        pages are skipped with a warning."""
        out: list[IntervalText] = []
        metas: dict[str, dict[str, Any]] = {}
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

    def doc(
        self, item: IntervalText, label: int, meta_of: dict[str, dict[str, Any]]
    ) -> dict[str, Any]:
        """The Whoosh document of interval ``item`` under vector label ``label``."""
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

    # -- full ---------------------------------------------------------------------------------

    def full(
        self, head: str | None, progress: Progress | None, cancel: threading.Event | None = None
    ) -> SyncReport:
        """Build a generation of ``head`` from scratch and publish it. The pages are read
        twice, never held: once to count the intervals and their vectors (the graph is made
        at its final size, since hnswlib's resize copies it), then step by step as they are
        embedded and indexed."""
        path = self.layout.new_dir(head)
        (path / "whoosh").mkdir()
        pages, count, vector_count = self.count_at(head) if head else (0, 0, 0)
        capacity = max(MIN_CAPACITY, int(vector_count * CAPACITY_GROWTH))
        vectors = ann.Index(space="cosine", dim=embedder.DIM)
        vectors.init_index(
            max_elements=capacity,
            ef_construction=HNSW_EF_CONSTRUCTION,
            M=HNSW_M,
            allow_replace_deleted=True,
        )
        steps = self.steps_at(head, SEGMENT_DOCS) if head else iter(())
        indexed = self._index_all(path, steps, count, vectors, progress)
        if indexed != count:  # the same commit read twice: only a bug gets here
            raise StorageError(f"a build of {head} found {indexed} intervals, then {count}")
        vec: dict[str, Any] = {
            "base_count": 0,
            "capacity": capacity,
            "delta": 0,
            "dead": 0,
            "deltas": [],
            "ann": ann.ANN_BUILD,
        }
        if count:
            vec.update(save_base(vectors, path / "vectors.hnsw"))
        vec.update({"delta": 0, "dead": 0, "marked_deleted": 0})
        meta = {
            "format": INDEX_FORMAT,
            "tenant": self.tenant,
            "commit": head,
            "embedder": embedder.embedder_id(),
            "count": count,
            "next_label": count,
            "vectors": vec,
            "late": {"base": count, "delta": 0, "tables": [[LATE_FILE, count]]},
        }
        self.layout.publish(path, meta, cancel)
        if count:
            # The graph just built is the one the next search would read from disk.
            keep_base(self.layout.dir, vec["base_id"], vectors)
        self.checkpoints.clear()
        return SyncReport(self.tenant, head, "full", pages, count, 0)

    def count_at(self, commit: str) -> tuple[int, int, int]:
        """How many pages, intervals and vectors the index of ``commit`` holds (the pages
        read and let go)."""
        pages = intervals = vector_count = 0
        for record in self.store.iter_pages(commit):
            pages += 1
            for item in cut_page(record.page, record.page_id, record.path, commit, record.blob):
                intervals += 1
                vector_count += len(vector_texts(item.text, item.speaker))
        return pages, intervals, vector_count

    def steps_at(self, commit: str, size: int) -> Iterator[Step]:
        """The intervals of every page at ``commit``, ``size`` at a time, each step with the
        headers of the pages it holds intervals of (a page can span steps)."""
        items: list[IntervalText] = []
        metas: dict[str, dict[str, Any]] = {}
        for record in self.store.iter_pages(commit):
            metas[record.page_id] = record.page.meta
            items += cut_page(record.page, record.page_id, record.path, commit, record.blob)
            while len(items) >= size:
                yield items[:size], metas
                items = items[size:]
                metas = {record.page_id: record.page.meta} if items else {}
        if items:
            yield items, metas

    def _index_all(
        self,
        path: Path,
        steps: Iterator[Step],
        total: int,
        vectors: ann.Index,
        progress: Progress | None,
    ) -> int:
        """Embed the intervals of ``steps`` (``total`` of them) step by step and add them to
        ``vectors``, to a new Whoosh index at ``path`` and to its table of word pieces
        (quantized before a step waits for the indexing thread, and written step by step: as
        floats they were most of a build's memory, 34 KB an interval, and even as codes 3 KB).
        One writer, one segment: the fewest postings lists for a query to read. Embedding (the
        model) and indexing (the graph, Whoosh and the pieces, on another thread) of
        successive steps overlap. Returns how many intervals were indexed."""
        ix = create_whoosh(path / "whoosh")
        writer = ix.writer(procs=1, limitmb=FULL_WRITER_MB, codec=make_codec())
        pending: queue.Queue[Chunk | None] = queue.Queue(2)
        pieces = TableWriter(path / LATE_FILE)
        failed: list[BaseException] = []

        def index_chunks() -> None:
            while (job := pending.get()) is not None:
                start, chunk, metas, emb, counts, codes = job
                if failed:
                    continue
                try:
                    labels = vector_labels(np.arange(start, start + len(chunk)), counts)
                    vectors.add_items(emb, labels, num_threads=1)
                    pieces.add(codes)
                    for n, item in enumerate(chunk):
                        writer.add_document(**self.doc(item, start + n, metas))
                except BaseException as exc:
                    failed.append(exc)

        worker = threading.Thread(target=index_chunks, name="kbmem-index-build", daemon=True)
        worker.start()
        done = 0
        try:
            try:
                for chunk, metas in steps:
                    if failed:
                        break
                    texts = [vector_texts(it.text, it.speaker) for it in chunk]
                    emb, counts, codes = self.checkpoints.embed(texts, progress, done, total)
                    pending.put((done, chunk, metas, emb, counts, codes))
                    done += len(chunk)
            finally:
                pending.put(None)
                worker.join()
            if failed:
                raise failed[0]
            writer.commit()
            pieces.close()
        except BaseException:
            writer.cancel()
            pieces.cancel()
            raise
        finally:
            # Whoosh's pool and the steps' buffers, freed now, are holes in malloc's arenas
            # that nothing else would give back (kbmem.heap.give_back_free_memory).
            heap.give_back_free_memory()
        ix.close()
        return done

    # -- incremental --------------------------------------------------------------------------

    def _changed(self, gen: Generation, head: str) -> tuple[set[str], set[str]]:
        """The page paths whose intervals leave the index, and those whose intervals join it,
        between ``gen``'s commit and ``head``."""
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
        return removed_paths, added_paths

    def incremental(
        self,
        gen: Generation,
        head: str,
        progress: Progress | None,
        cancel: threading.Event | None = None,
    ) -> SyncReport:
        """Build the generation of ``head`` from ``gen`` and the pages changed since, and
        publish it."""
        removed_paths, added_paths = self._changed(gen, head)
        meta = json.loads(json.dumps(gen.meta))
        vec = meta["vectors"]
        # The live generation's reader is opened only when there is something to drop.
        dropped_docs = [
            doc for p in sorted(removed_paths) for doc in gen.searcher().documents(path=p)
        ]
        dropped = np.asarray([int(doc["label"]) for doc in dropped_docs], dtype=np.int64)
        items, metas = self.intervals_at(head, sorted(added_paths))
        emb, counts, pieces = embed_reusing(
            gen, dropped_docs, items, progress, embedding=self.checkpoints.embed_floats
        )
        first = int(meta["next_label"])
        new_labels = vector_labels(np.arange(first, first + len(items)), counts)
        delta = next_delta(gen, dropped, new_labels, emb)

        path = self.layout.new_dir(head)
        count = self._update_whoosh(gen, path, sorted(removed_paths), items, first, metas)
        meta["late"] = next_pieces(gen, path, dropped, first, pieces)
        base_count = int(vec["base_count"])
        folded: ann.Index | None = None
        if should_fold(gen, delta, base_count):
            fields, folded = fold_delta(gen, path, whole_delta(gen, delta))
            vec.update(fields)
            vec["deltas"] = []
        else:
            if base_count:
                link(gen.path / "vectors.hnsw", path / "vectors.hnsw")
            vec["deltas"] = next_segments(gen, path, delta)
        vec.update(
            {
                "delta": sum(count for _name, count, _dead in vec["deltas"]),
                "dead": sum(dead for _name, _count, dead in vec["deltas"]),
            }
        )
        meta.update({"commit": head, "count": count, "next_label": first + len(items)})
        self.layout.publish(path, meta, cancel)
        if folded is not None:
            # The folded graph is the new base: kept, so that it is not read again beside it.
            keep_base(self.layout.dir, vec["base_id"], folded)
        self.checkpoints.clear()
        changed = len(removed_paths | added_paths)
        return SyncReport(self.tenant, head, "incremental", changed, len(items), len(dropped))

    def _update_whoosh(
        self,
        gen: Generation,
        path: Path,
        removed_paths: list[str],
        items: list[IntervalText],
        first: int,
        metas: dict[str, dict[str, Any]],
    ) -> int:
        """``gen``'s Whoosh index, linked into ``path``, without the intervals of
        ``removed_paths`` and with ``items`` (labels from ``first``); returns its count."""
        (path / "whoosh").mkdir()
        for f in (gen.path / "whoosh").iterdir():
            if not f.name.endswith("LOCK"):
                link(f, path / "whoosh" / f.name)
        ix = open_whoosh(path / "whoosh", readonly=False)
        writer = ix.writer(procs=1, limitmb=INCREMENTAL_WRITER_MB, codec=make_codec())
        try:
            for p in removed_paths:
                writer.delete_by_term("path", p)
            for n, item in enumerate(items):
                writer.add_document(**self.doc(item, first + n, metas))
            writer.commit(mergetype=merge_policy)
        except BaseException:
            writer.cancel()
            raise
        count = live_count(ix)
        ix.close()
        return count
