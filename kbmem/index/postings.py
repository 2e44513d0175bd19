"""The BM25 side of an index generation, stored by Whoosh: its schema and codec, the merge
policy an incremental sync writes with, and fast reads of what Whoosh wrote.

Whoosh stores the postings and field lengths; kbmem scores BM25 itself, with numpy over those
arrays (``kbmem.index.tenant``), counting live intervals only. The reads here decode a segment's
postings a block at a time and its per-document columns in one go, and keep them by segment
id: a segment never changes once written (deletions live in the table of contents), so what
was decoded for one generation serves the next one that hard-links the segment.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
from whoosh import columns as whoosh_columns
from whoosh.codec.whoosh3 import W3Codec
from whoosh.fields import COLUMN, ID, KEYWORD, STORED, TEXT, Schema
from whoosh.filedb.filestore import FileStorage
from whoosh.matching.wrappers import FilterMatcher
from whoosh.reading import SegmentReader, TermNotFound
from whoosh.util.numeric import byte_to_length

from kbmem.errors import StorageError
from kbmem.index.analysis import make_analyzer

ANALYZER = make_analyzer()
POSTING_BLOCK = 1024
SMALL_SEGMENT = 500  # Whoosh segments smaller than this are folded together...
MERGE_SMALL_AT = 8  # ...once there are this many of them
REWRITE_DELETED_SHARE = 0.3  # a segment with this share of deleted intervals is rewritten
LABELS = "label_col"
LENGTHS = "_text_len"  # Whoosh's per-document length column of the ``text`` field
_BYTE_TO_LENGTH = np.array([byte_to_length(b) for b in range(256)], dtype=np.int64)


def make_schema() -> Schema:
    return Schema(
        key=ID(stored=True, unique=True),
        tenant=ID(stored=True),
        label=STORED,
        label_col=COLUMN(whoosh_columns.NumericColumn("q", default=-1)),
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
        speaker=ID(stored=True),
        timestamp=STORED,
        content=STORED,
        # Term frequencies only, no positions: queries are bags of terms, and a query reads
        # (unpickles) every posting block of its terms.
        text=TEXT(analyzer=ANALYZER, phrase=False),
    )


def make_codec() -> W3Codec:
    """Whoosh's codec with big, uncompressed posting blocks: reading a long postings list
    costs a few large unpickles instead of many small ones plus zlib."""
    return W3Codec(blocklimit=POSTING_BLOCK, compression=0)


def open_whoosh(path: Path, readonly: bool = True) -> Any:
    """The Whoosh index in directory ``path``, its files read through file handles, not
    memory maps: a segment's file opened from a memory map is copied whole into memory, so
    each reader opened (a sync opens two or three, every new generation's searcher one per
    thread) copied the whole base segment's postings and terms (29 MB at 60,000 intervals),
    and a one-page sync's time grew with the index."""
    return FileStorage(str(path), supports_mmap=False, readonly=readonly).open_index()


def create_whoosh(path: Path) -> Any:
    """A new, empty Whoosh index in directory ``path`` (read as open_whoosh reads it)."""
    return FileStorage(str(path), supports_mmap=False).create_index(make_schema())


def live_count(ix: Any) -> int:
    """The live documents of Whoosh index ``ix``, from its table of contents: without a
    reader, which would open every segment's files."""
    return sum(int(segment.doc_count()) for segment in ix._segments())


def merge_policy(writer: Any, segments: list[Any]) -> list[Any]:
    """Whoosh merge policy: rewrite segments that are mostly deleted, fold small segments
    together once there are several; everything else stays as it is (a sync must not cost
    the size of the index). Deletions left inside segments do not change scores: BM25 here
    counts live intervals only."""
    keep, small = [], []
    for segment in segments:
        total = segment.doc_count_all()
        if segment.has_deletions() and segment.deleted_count() >= REWRITE_DELETED_SHARE * total:
            _rewrite(writer, segment)
        elif total < SMALL_SEGMENT:
            small.append(segment)
        else:
            keep.append(segment)
    if len(small) >= MERGE_SMALL_AT:
        for segment in small:
            _rewrite(writer, segment)
    else:
        keep += small
    return keep


def _rewrite(writer: Any, segment: Any) -> None:
    reader = SegmentReader(writer.storage, writer.schema, segment)
    writer.add_reader(reader)
    reader.close()


# -- fast reads of Whoosh's structures --------------------------------------------------------


def _column(reader: SegmentReader, name: str, typecode: str, default: int) -> np.ndarray:
    """One per-document column of a segment as an int64 array (fixed-size big-endian values
    as Whoosh writes them; documents past the written end hold the default)."""
    n = reader.doc_count_all()
    out = np.full(n, default, dtype=np.int64)
    perdoc = getattr(reader, "_perdoc", None)
    if perdoc is None or not perdoc.has_column(name):
        return out
    column = whoosh_columns.NumericColumn(typecode, default=default)
    creader = perdoc.column_reader(name, column)
    size = np.dtype(typecode).itemsize
    dbfile, base, count = (
        getattr(creader, "_dbfile", None),
        getattr(creader, "_basepos", None),
        getattr(creader, "_count", None),
    )
    if dbfile is not None and base is not None and count is not None:
        count = min(int(count), n)
        raw = dbfile.get(base, count * size)
        out[:count] = np.frombuffer(raw, dtype=np.dtype(typecode).newbyteorder(">"))
    else:  # another Whoosh version: the slow, public way
        out[:] = np.fromiter((creader[i] for i in range(n)), dtype=np.int64, count=n)
    return out


_POSTINGS_CACHE: OrderedDict[tuple[str, int, str, str], tuple[np.ndarray, np.ndarray]] = (
    OrderedDict()
)
_POSTINGS_CACHE_LOCK = threading.Lock()
_POSTINGS_CACHE_MAX = 8_000_000  # postings kept decoded (8 bytes each)
_postings_cached = 0


def cached_postings(
    reader: SegmentReader, fieldname: str, term: str
) -> tuple[np.ndarray, np.ndarray]:
    """Document numbers (local to the segment, deleted ones included) and weights of
    ``term``. A segment's postings never change once written, so decoded lists are kept,
    by segment id, across generations and queries (up to a bounded number of postings)."""
    global _postings_cached
    segment = reader.segment()
    key = (segment.segment_id(), reader.doc_count_all(), fieldname, term)
    with _POSTINGS_CACHE_LOCK:
        found = _POSTINGS_CACHE.get(key)
        if found is not None:
            _POSTINGS_CACHE.move_to_end(key)
            return found
    found = _read_postings(reader, fieldname, term)
    with _POSTINGS_CACHE_LOCK:
        if key not in _POSTINGS_CACHE:
            _POSTINGS_CACHE[key] = found
            _postings_cached += len(found[0])
        while _postings_cached > _POSTINGS_CACHE_MAX and _POSTINGS_CACHE:
            _key, (ids, _w) = _POSTINGS_CACHE.popitem(last=False)
            _postings_cached -= len(ids)
    return found


def _read_postings(
    reader: SegmentReader, fieldname: str, term: str
) -> tuple[np.ndarray, np.ndarray]:
    try:
        matcher = reader.postings(fieldname, term)
    except TermNotFound:
        return np.zeros(0, np.int32), np.zeros(0, np.float32)
    # In a segment with deletions Whoosh wraps the postings in a filter that skips deleted
    # documents one call at a time; the caller masks them with arrays instead.
    while isinstance(matcher, FilterMatcher) and hasattr(matcher.child, "reset"):
        matcher = matcher.child
        matcher.reset()
    ids: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    blockwise = all(
        hasattr(matcher, a)
        for a in ("_read_data", "_data", "_byteids", "_read_weights", "_next_block")
    )
    if blockwise:
        # A block at a time: its ids are stored as deltas (decoded here with numpy).
        while matcher.is_active():
            if matcher._data is None:
                matcher._read_data()
            raw = np.asarray(matcher._data[0], dtype=np.int64)
            ids.append(raw if matcher._byteids else np.cumsum(raw))
            matcher._read_weights()
            weights.append(np.asarray(matcher._weights, dtype=np.float32))
            matcher._next_block()
    else:
        one_ids, one_weights = [], []
        while matcher.is_active():
            one_ids.append(matcher.id())
            one_weights.append(matcher.weight())
            matcher.next()
        ids.append(np.asarray(one_ids, dtype=np.int64))
        weights.append(np.asarray(one_weights, dtype=np.float32))
    if not ids:
        return np.zeros(0, np.int32), np.zeros(0, np.float32)
    return np.concatenate(ids).astype(np.int32), np.concatenate(weights)


_SEGMENT_CACHE: OrderedDict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = OrderedDict()
_SEGMENT_CACHE_LOCK = threading.Lock()
_SEGMENT_CACHE_SIZE = 256


def segment_leaves(reader: Any) -> list[tuple[SegmentReader, int]]:
    """The reader's segments with their document offsets (an empty index has a leaf reader
    without a segment: it holds nothing to read)."""
    return [(leaf, offset) for leaf, offset in reader.leaf_readers() if leaf.segment()]


def _segment_arrays(reader: SegmentReader) -> tuple[np.ndarray, np.ndarray]:
    """(labels, field lengths) of a segment's documents. A segment never changes once
    written (deletions live in the table of contents), so they are cached by segment id."""
    segment = reader.segment()
    key = (segment.segment_id(), reader.doc_count_all())
    with _SEGMENT_CACHE_LOCK:
        if key in _SEGMENT_CACHE:
            _SEGMENT_CACHE.move_to_end(key)
            return _SEGMENT_CACHE[key]
    labels = _column(reader, LABELS, "q", -1)
    lengths = _BYTE_TO_LENGTH[_column(reader, LENGTHS, "B", 0)]
    with _SEGMENT_CACHE_LOCK:
        _SEGMENT_CACHE[key] = (labels, lengths)
        while len(_SEGMENT_CACHE) > _SEGMENT_CACHE_SIZE:
            _SEGMENT_CACHE.popitem(last=False)
    return labels, lengths


class IndexView:
    """Whole-index arrays over global document numbers: which are live, their labels and
    field lengths, and labels back to document numbers."""

    def __init__(self, reader: Any):
        leaves = segment_leaves(reader)
        self.offsets = [offset for _r, offset in leaves]
        total = reader.doc_count_all()
        self.live = np.ones(total, dtype=bool)
        self.labels = np.full(total, -1, dtype=np.int64)
        self.lengths = np.zeros(total, dtype=np.int64)
        for leaf, offset in leaves:
            n = leaf.doc_count_all()
            labels, lengths = _segment_arrays(leaf)
            self.labels[offset : offset + n] = labels
            self.lengths[offset : offset + n] = lengths
            segment = leaf.segment()
            if segment.has_deletions():
                dead = np.fromiter(segment.deleted_docs(), dtype=np.int64)
                self.live[offset + dead[dead < n]] = False
        self.n_live = int(self.live.sum())
        # Exact integer sums: the same live intervals give the same statistics, bit for bit.
        total_length = int(self.lengths[self.live].sum())
        self.avg_length = (total_length / self.n_live) if self.n_live else 1.0
        self.avg_length = self.avg_length or 1.0
        self.live_docs = np.flatnonzero(self.live)
        live_labels = self.labels[self.live_docs]
        if len(live_labels) and live_labels.min() < 0:
            raise StorageError("an interval of the index has no vector label")
        size = int(live_labels.max()) + 1 if len(live_labels) else 0
        self.doc_of_label = np.full(size, -1, dtype=np.int64)
        self.doc_of_label[live_labels] = self.live_docs
        self._live_label_set: set[int] | None = None
        self._pages: tuple[list[str], np.ndarray, np.ndarray] | None = None

    def pages(self, reader: Any) -> tuple[list[str], np.ndarray, np.ndarray]:
        """``(page ids, page index of each document (-1 if dead), length of each page)``: what
        page-level BM25 needs, read once from the postings of the ``page`` field through
        ``reader``, the calling thread's reader of the same generation (a reader reads its
        files by seeking, so it is not shared between threads)."""
        if self._pages is None:
            index: dict[str, int] = {}
            page_of = np.full(len(self.live), -1, dtype=np.int64)
            for leaf, offset in segment_leaves(reader):
                for raw in leaf.lexicon("page"):
                    name = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
                    ids = cached_postings(leaf, "page", name)[0].astype(np.int64) + offset
                    page_of[ids] = index.setdefault(name, len(index))
            names = list(index)
            page_of[~self.live] = -1
            alive = page_of >= 0
            lengths = np.bincount(page_of[alive], weights=self.lengths[alive], minlength=len(names))
            self._pages = (names, page_of, lengths)
        return self._pages

    def live_label_set(self) -> set[int]:
        if self._live_label_set is None:
            self._live_label_set = set(self.labels[self.live_docs].tolist())
        return self._live_label_set

    def docs_of(self, labels: np.ndarray) -> np.ndarray:
        """Document numbers of live intervals by label (-1 where none is live)."""
        labels = np.asarray(labels, dtype=np.int64)
        out = np.full(len(labels), -1, dtype=np.int64)
        ok = (labels >= 0) & (labels < len(self.doc_of_label))
        out[ok] = self.doc_of_label[labels[ok]]
        return out
