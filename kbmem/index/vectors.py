"""The dense side of an index generation: what is embedded for an interval, the hnswlib graph
on disk (checked before it is read), and nearest-neighbour searches of it.

An interval has several vectors: one of its whole text, and, when it says more than one thing,
one per sentence (see ``vector_texts``). Interval ``L`` owns the vector labels ``L *
VECTOR_STRIDE + j``; a dense search scores an interval by its nearest vector.
"""

from __future__ import annotations

import math
import os
import threading
import uuid
import zlib
from collections import OrderedDict
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kbmem.errors import StorageError
from kbmem.index import ann, embedder
from kbmem.textutil import PIECE_BREAK, SENTENCE_BREAK

# Vector labels of interval L are L * VECTOR_STRIDE + j: j = 0 its whole text, j >= 1 its
# sentences (at most VECTOR_STRIDE - 1 pieces; more sentences are grouped into that many).
VECTOR_STRIDE = 32
PIECE_MIN_WORDS = 3  # shorter sentences ("Thanks!", "Wow.") say nothing worth a vector
# A dense search for k intervals asks the graph for this many times k vectors: an interval's
# sentences are often each other's nearest neighbours.
VECTORS_PER_HIT = 3
HNSW_M = 16
# Candidates kept while a vector is inserted, and the least a search keeps: on the 26,739
# vectors of the scale benchmark's 2,000 pages, a graph built with 100 took half the CPU of
# one built with 200 (7.3 against 14.0 s, a tenth of that build's), and searched with 80 it
# finds as many of the true 30 nearest as the graph of 200 searched with 64 (0.954 against
# 0.952 over 300 queries; docs/benchmarks.md, stop 44).
HNSW_EF_CONSTRUCTION = 100
SEARCH_EF = 80
# The model reads 256 word pieces (a thousand characters or so of prose), but its tokenizer
# reads the whole text first (tens of seconds for a 10 MB turn). Texts are cut to this many
# characters.
MAX_EMBED_CHARS = 4096


def embed_texts(texts: list[str]) -> np.ndarray:
    """Vectors of interval texts and queries, each cut to ``MAX_EMBED_CHARS`` first."""
    return embedder.embed([text[:MAX_EMBED_CHARS] for text in texts])


def read_texts(texts: list[str]) -> list[embedder.Reading]:
    """The model's readings of interval texts (each one's vector, and its word pieces for
    kbmem.index.late, from the same pass), each cut to ``MAX_EMBED_CHARS`` first."""
    return embedder.read_texts([text[:MAX_EMBED_CHARS] for text in texts])


def read_query(query: str) -> embedder.QueryReading:
    """The model's reading of a query (its vector and piece vectors), cut as texts are."""
    return embedder.read_query(query[:MAX_EMBED_CHARS])


def read_queries(queries: list[str]) -> list[embedder.QueryReading]:
    """``read_query`` of several queries, those not read yet in one pass of the model."""
    return embedder.read_queries([query[:MAX_EMBED_CHARS] for query in queries])


def vector_texts(text: str, speaker: str = "") -> list[str]:
    """What is embedded for one interval: its whole text, then, if it says more than one
    thing, each of its sentences (a turn's with its speaker, "John: I'm doing kickboxing.").
    One vector of a long turn is the average of everything said in it, and the model reads
    only its first 256 word pieces: "We even played some Chess afterward", the fourth
    sentence of a turn about a party, is far from "What board games has Nate played?" until
    it has a vector of its own.
    A note's paragraph is cut at sentence ends only, so that the line naming its section stays
    with the first sentence rather than becoming a piece shared by every paragraph."""
    prefix = f"{speaker}: " if speaker else ""
    body = text[len(prefix) :] if prefix and text.startswith(prefix) else text
    cut = PIECE_BREAK if speaker else SENTENCE_BREAK  # a turn's lines: text, then captions
    pieces = [p.strip() for p in cut.split(body) if len(p.split()) >= PIECE_MIN_WORDS]
    if len(pieces) < 2:
        return [text]
    if len(pieces) >= VECTOR_STRIDE:
        size = math.ceil(len(pieces) / (VECTOR_STRIDE - 1))
        pieces = [" ".join(pieces[i : i + size]) for i in range(0, len(pieces), size)]
    return [text] + [prefix + p for p in pieces]


def vector_labels(labels: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The vector labels of intervals ``labels`` that have ``counts`` vectors each."""
    labels = np.asarray(labels, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    if not len(labels):
        return np.zeros(0, np.int64)
    starts = np.repeat(labels * VECTOR_STRIDE, counts)
    offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    out: np.ndarray = starts + offsets
    return out


# Base graphs loaded, by base id, with the index folder of the tenant each belongs to: the
# newest of each tenant (an older one, replaced by a full build or a fold, stays only as long
# as a generation still open holds it), of at most _BASES_KEPT tenants.
_BASES: OrderedDict[str, tuple[Path, ann.Index]] = OrderedDict()
_BASES_LOCK = threading.Lock()
_BASES_KEPT = 4
# hnswlib keeps a query's ``ef`` on the graph object, which searches in other threads share
# (the researcher's parallel actions; requests of the HTTP API; copies of one knowledge base):
# setting it and searching happen under this lock, or a search may run with another's ef.
_KNN_LOCK = threading.Lock()


def _file_crc(path: Path) -> int:
    crc = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            crc = zlib.crc32(chunk, crc)
    return crc


def load_vectors(path: Path, meta: dict[str, Any]) -> ann.Index:
    """The base vector graph of a generation, checked against its meta (size and checksum)
    before hnswlib reads it, so that a damaged file is an error and never a crash."""
    vec = meta.get("vectors") or {}
    index = ann.Index(space="cosine", dim=embedder.DIM)
    capacity = max(int(vec.get("capacity", 0)), 16)
    if int(vec.get("base_count", 0)) == 0:
        index.init_index(
            max_elements=capacity,
            ef_construction=HNSW_EF_CONSTRUCTION,
            M=HNSW_M,
            allow_replace_deleted=True,
        )
        return index
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise StorageError(f"vector index {path} is missing: {exc}") from exc
    if size != vec.get("base_bytes") or _file_crc(path) != vec.get("base_crc"):
        raise StorageError(f"vector index {path} is damaged (size or checksum differ)")
    try:
        index.load_index(str(path), max_elements=capacity, allow_replace_deleted=True)
    except Exception as exc:
        raise StorageError(f"vector index {path} cannot be read: {exc}") from exc
    if index.get_current_count() != vec.get("base_count"):
        raise StorageError(f"vector index {path} does not match its meta")
    index.set_ef(SEARCH_EF)
    return index


def shared_base(path: Path, meta: dict[str, Any]) -> ann.Index:
    """The base graph, loaded once per process and shared by the generations that hard-link
    it (read-only: a sync that changes the graph loads a private copy)."""
    base_id = str((meta.get("vectors") or {}).get("base_id") or path)
    with _BASES_LOCK:
        if base_id in _BASES:
            _BASES.move_to_end(base_id)
            return _BASES[base_id][1]
    index = load_vectors(path, meta)
    keep_base(path.parent.parent, base_id, index)
    return index


def keep_base(tenant_dir: Path, base_id: str, index: ann.Index) -> None:
    """Keep ``index`` as the base graph ``base_id`` of the tenant whose index folder is
    ``tenant_dir`` (a build hands over the graph it wrote, so that it is not read again),
    in place of any other base of that tenant: once a new base is published, an older one
    serves only the generations still open that hold it, and they keep their own
    reference (kbmem.index.generation.Generation.base)."""
    with _BASES_LOCK:
        for other in [key for key, (where, _) in _BASES.items() if where == tenant_dir]:
            del _BASES[other]
        _BASES[base_id] = (tenant_dir, index)
        while len(_BASES) > _BASES_KEPT:
            _BASES.popitem(last=False)


def save_base(index: ann.Index, path: Path) -> dict[str, Any]:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    index.save_index(str(tmp))
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return {
        "base_id": uuid.uuid4().hex,
        "base_count": index.get_current_count(),
        "base_bytes": path.stat().st_size,
        "base_crc": _file_crc(path),
        "capacity": index.get_max_elements(),
    }


DELTA_FILES = ("labels.npy", "vectors.npy", "dead.npy", "gone.npy")


@dataclass(frozen=True)
class DeltaSegment:
    """Vectors one or more syncs added beside the base graph (``labels``, ``vectors``), the
    base intervals they removed (``dead``), and the intervals they removed whose vectors are
    in earlier segments (``gone``; interval labels are never reused, so those vectors are
    simply not live any more). A segment is written once, by the sync that makes it, and
    shared by hard link with the generations after it."""

    labels: np.ndarray
    vectors: np.ndarray
    dead: np.ndarray
    gone: np.ndarray

    @classmethod
    def load(cls, path: Path, count: int, dead: int) -> DeltaSegment:
        """The segment at ``path``, its vectors memory-mapped, checked against the meta's
        counts."""
        try:
            labels, dead_labels, gone = (
                np.load(path / name, allow_pickle=False)
                for name in ("labels.npy", "dead.npy", "gone.npy")
            )
            vectors = np.load(path / "vectors.npy", mmap_mode="r", allow_pickle=False)
        except Exception as exc:
            raise StorageError(f"vector delta {path} is damaged: {exc}") from exc
        if (
            len(labels) != count
            or vectors.shape != (count, embedder.DIM)
            or vectors.dtype != np.float32
            or len(dead_labels) != dead
        ):
            raise StorageError(f"vector delta {path} does not match meta")
        return cls(labels.astype(np.int64), vectors, dead_labels.astype(np.int64), gone)

    @classmethod
    def merged(cls, segments: list[DeltaSegment]) -> DeltaSegment:
        """One segment of ``segments`` in order, without the vectors their removals name."""
        gone = np.concatenate([seg.gone for seg in segments]).astype(np.int64)
        labels = np.concatenate([seg.labels for seg in segments])
        keep = ~np.isin(labels // VECTOR_STRIDE, gone)
        vectors = np.vstack([np.asarray(seg.vectors) for seg in segments])
        dead = np.concatenate([seg.dead for seg in segments]).astype(np.int64)
        return cls(labels[keep], vectors[keep], dead, gone)

    def size(self) -> int:
        """What the segment holds: vectors and removed labels."""
        return len(self.labels) + len(self.dead) + len(self.gone)

    def save(self, path: Path) -> None:
        path.mkdir()
        arrays = (self.labels, np.asarray(self.vectors, np.float32), self.dead, self.gone)
        for name, array in zip(DELTA_FILES, arrays, strict=True):
            with open(path / name, "wb") as handle:
                np.save(handle, array, allow_pickle=False)
                handle.flush()
                os.fsync(handle.fileno())


@dataclass(frozen=True)
class GraphSearch:
    """Nearest-neighbour searches of one base graph. ``allowed`` tells the labels a search may
    return (None: any); ``alive`` tells the vectors of live intervals (the graph keeps deleted
    vectors' labels until their slots are reused)."""

    base: ann.Index
    allowed: Callable[[int], bool] | None
    alive: Callable[[int], bool]

    def intervals(self, vec: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Nearest vectors of at least ``k`` intervals (as many as the graph holds): k times
        VECTORS_PER_HIT vectors, more while the sentences of fewer intervals fill them (a
        long note's paragraphs, sentence after sentence on the query's subject)."""
        count = self.base.get_current_count()
        many = k * VECTORS_PER_HIT
        while True:
            many = min(many, count)
            found = self.vectors(vec, many)
            owners = len(np.unique(found[0] // VECTOR_STRIDE))
            if owners >= k or many >= count or len(found[0]) < many:
                return found
            many *= 2

    def vectors(self, vec: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest vector labels and their cosine similarities."""
        if k <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        base, allowed, query = self.base, self.allowed, vec.reshape(1, -1)
        ef = max(SEARCH_EF, 2 * k)
        with _KNN_LOCK:
            base.set_ef(ef)
            try:
                labels, distances = base.knn_query(query, k=k, filter=allowed)
            except RuntimeError:
                labels = None
                # Fewer than k reachable: ask for what the graph can give, at a wider search.
                base.set_ef(max(ef, 4 * k, 256))
                with suppress(RuntimeError):
                    labels, distances = base.knn_query(query, k=k, filter=allowed)
        if labels is None:
            ids = np.asarray(base.get_ids_list(), dtype=np.int64)
            ok = (self.alive(i) and (allowed is None or allowed(i)) for i in ids.tolist())
            ids = ids[np.fromiter(ok, bool, len(ids))]
            items = np.asarray(base.get_items(ids), dtype=np.float32)
            sims = items @ vec
            order = np.argsort(-sims)[:k]
            return ids[order], sims[order]
        return labels[0].astype(np.int64), (1.0 - distances[0]).astype(np.float32)
