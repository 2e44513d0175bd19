"""One index generation of a tenant, opened for reading: its meta, its Whoosh reader, its vector
graph and delta, its word-piece tables, and the per-generation caches searches share (filtered
vectors, speakers, spellings). A generation never changes once published, so what is read from
it can be kept as long as it is open.

On disk a generation is a folder ``gen-<id>/`` holding meta.json; whoosh/ (BM25 postings and the
interval table); vectors.hnsw (the base vector graph); delta-<label>-<id>/ (segments of vectors
added since, and of the labels of intervals that died; kbmem.index.vectors.DeltaSegment); late/
and late-<label>-<id>/ (word-piece tables)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from kbmem.errors import StorageError
from kbmem.index import ann, embedder
from kbmem.index.hits import term_postings
from kbmem.index.late import PieceTable
from kbmem.index.postings import IndexView, live_count, open_whoosh, segment_leaves
from kbmem.index.spelling import nearest_spelling
from kbmem.index.vectors import VECTOR_STRIDE, DeltaSegment, shared_base

# 13: "*" (markdown emphasis) is no part of a word; 12: word pieces as 3-bit codes; 11: the
# vector delta as append-only segments; 10: word pieces of content words only, as int8 codes
# and scales in .npy files (memory-mapped); 9: word-piece vectors for late interaction; 8:
# hyphenated words also as one word; 7: a vector per sentence
INDEX_FORMAT = 13
# The vectors of this many recent filters are kept (6 MB per 4,096 vectors): the same filter (a
# speaker, a session) comes back query after query.
FILTERED_CACHE = 8

FilterKey = tuple[tuple[str, str], ...]


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
            self.ix = open_whoosh(path / "whoosh")
            doc_count = live_count(self.ix)
            vec = self.meta["vectors"]
            if int(vec["base_count"]) and (path / "vectors.hnsw").stat().st_size != int(
                vec["base_bytes"]
            ):
                raise StorageError("the vector index's size differs from its meta")
            for name, _count, _dead in vec["deltas"]:
                if not (path / str(name)).is_dir():
                    raise StorageError(f"the vector delta {name} is missing")
            for name, count in self.meta["late"]["tables"]:
                if int(count) and not (path / str(name)).is_dir():
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
        self._segments: list[DeltaSegment] | None = None
        self._speakers: list[str] | None = None
        self._filtered: OrderedDict[FilterKey, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._base: ann.Index | None = None
        self._base_ids: np.ndarray | None = None  # every vector label of the base graph
        self._pieces: list[PieceTable] | None = None
        self._spelled: dict[str, str] = {}

    def pieces(self) -> list[PieceTable]:
        """The word-piece tables (kbmem.index.late): the base table, then those added since,
        read once and checked against the meta's counts."""
        with self._lock:
            if self._pieces is None:
                self._pieces = [
                    PieceTable.load(self.path / str(name), int(count))
                    for name, count in self.meta["late"]["tables"]
                ]
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
        commit: str | None = self.meta.get("commit")
        return commit

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

    def base(self) -> ann.Index | None:
        """The base vector graph (kbmem.index.vectors.shared_base), held from its first read
        as long as this generation is open: the shared cache lets go of it once a newer
        base of the tenant is loaded, and reading it again would hold it twice."""
        if not int(self.meta["vectors"]["base_count"]):
            return None
        with self._lock:
            found = self._base
        if found is None:
            found = shared_base(self.path / "vectors.hnsw", self.meta)
            with self._lock:
                if self._base is None:
                    self._base = found
                found = self._base
        return found

    def delta_segments(self) -> list[DeltaSegment]:
        """The vector delta's segments, oldest first (vectors memory-mapped), read once."""
        with self._lock:
            if self._segments is None:
                self._segments = [
                    DeltaSegment.load(self.path / str(name), int(count), int(dead))
                    for name, count, dead in self.meta["vectors"]["deltas"]
                ]
            return self._segments

    def delta(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(vector labels, vectors) of the live intervals added since the base graph, and the
        labels of base intervals that died since."""
        segments = self.delta_segments()
        if not segments:
            return (
                np.zeros(0, np.int64),
                np.zeros((0, embedder.DIM), np.float32),
                np.zeros(0, np.int64),
            )
        view = self.view()
        with self._lock:
            if self._delta is None:
                labels = np.concatenate([seg.labels for seg in segments])
                live = view.docs_of(labels // VECTOR_STRIDE) >= 0
                vectors = np.vstack([np.asarray(seg.vectors) for seg in segments])
                dead = np.concatenate([seg.dead for seg in segments])
                self._delta = (labels[live], np.ascontiguousarray(vectors[live]), dead)
            return self._delta

    def vectors_of(
        self, key: FilterKey, labels: np.ndarray, base: ann.Index
    ) -> tuple[np.ndarray, np.ndarray]:
        """The base graph's vector labels and vectors of the intervals ``labels``, those that
        pass the filter ``key``. Reading them from hnswlib costs about 35 µs each (50 ms for
        a speaker's turns in a long conversation), and the same filter comes back query
        after query (a speaker, a session): the last few filters' vectors are kept, of at
        most ``kbmem.index.search_dense.EXACT_MAX`` intervals each."""
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
        """``term`` as this generation spells it (kbmem.index.spelling), remembered per term."""
        with self._lock:
            found = self._spelled.get(term)
        if found is None:
            found = nearest_spelling(self, term)
            with self._lock:
                self._spelled[term] = found
        return found

    def doc_frequency(self, term: str, fieldname: str = "text") -> int:
        """How many live intervals hold ``term`` (an analyzed term)."""
        view = self.view()
        leaves = segment_leaves(self.searcher().reader())
        ids = term_postings(leaves, fieldname, term)[0]
        return int(view.live[ids].sum())

    def close(self) -> None:
        s = getattr(self._local, "searcher", None)
        if s is not None:
            s.close()
