"""Late interaction: an interval scored by how near each content word of a query comes to
its nearest word piece in the interval (the mean over the query's pieces of their best cosine
similarity, "MaxSim" as ColBERT scores), over the word-piece vectors that the embedding model
computes on its way to the one vector of a text.

One vector of a turn averages everything said in it, and a question rarely says it the way
the answer did. Scored piece by piece, "What martial arts has John done?" finds "kick ##box
##ing" near "martial" and "arts", where the pooled vector of a long turn about his week does
not (docs/benchmarks.md has what this gains on LoCoMo).

A generation keeps its intervals' piece vectors in tables (a label's rows from ``starts[i]``
to ``starts[i + 1]``): a base table ``late/`` and the tables of intervals added since, each
shared by hard link with the generations after it. An incremental sync writes a table of its
new intervals only, and merges tables as they pile up (kbmem.index.deltas.next_pieces). An
interval that died stays in its table until that is merged (a search keeps to live
intervals). A search scores every interval of the tenant exactly, with no approximate index:
one matrix product of the query's pieces with the table's, block by block.

Only the pieces of content words are kept (those a query's pieces are), each as CODE_BITS
bits a dimension with a scale (docs/decisions/compact-late-interaction.md): an eighth of the
float16 table's bytes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kbmem.errors import StorageError
from kbmem.index import embedder
from kbmem.index.vectors import read_query

LATE_FILE = "late"
TABLE_FILES = ("labels.npy", "starts.npy", "codes.npy", "scales.npy")
# Bits per dimension of a stored piece: each component is one of 2**CODE_BITS evenly spaced
# levels spanning the piece's largest component. A piece's codes are CODE_BITS planes of DIM
# bits (bit b of every component's level, packed eight to a byte).
CODE_BITS = 3
LEVELS = 1 << CODE_BITS
CODE_BYTES = CODE_BITS * embedder.DIM // 8
# Pieces scored per block of a search: the block's codes are widened to float32 for the
# product (24 MB at this size), never the whole table at once.
SCORE_BLOCK = 16384
# Words that carry no content of their own: a query's pieces of these are not scored (every
# turn has a piece near "the" or "did"), and an interval's are not stored.
FUNCTION_WORDS = frozenset(
    """a an the of to in on at for with and or but is are was were be been do does did has have
    had what which who whom when where why how that this these those it its i you he she they
    we my your his her their our me him them us as by from about into than then so not no yes
    can could would should will shall may might must there here any some all both each more
    most other such only own same too very just also if""".split()
)
_CONTENT = re.compile(r"[^\W_]", re.UNICODE)


def content_rows(names: tuple[str, ...] | list[str]) -> np.ndarray:
    """Indexes of the pieces named ``names`` that carry content: neither punctuation nor a
    piece of a function word."""
    keep = [
        n
        for n, name in enumerate(names)
        if _CONTENT.search(name) and name.lstrip("#").lower() not in FUNCTION_WORDS
    ]
    return np.asarray(keep, dtype=np.int64)


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors as packed codes (uint8, CODE_BYTES a vector) and a float32 scale, the
    step between levels, per vector: ``levels(codes) * scale`` is the vector again, each
    component within half a step (1/(LEVELS - 1) of the largest). The outer levels are the
    largest component and its negative, so a vector read back from its codes is quantized to
    the same codes again (a sync reuses pieces the index already holds)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if not len(vectors):
        return np.zeros((0, CODE_BYTES), np.uint8), np.zeros(0, np.float32)
    scales = np.abs(vectors).max(axis=1) * (2.0 / (LEVELS - 1))
    scales = np.maximum(scales, 1e-12).astype(np.float32)
    level = np.rint(vectors / scales[:, None] + (LEVELS - 1) / 2)
    level = np.clip(level, 0, LEVELS - 1).astype(np.uint8)
    planes = np.stack([(level >> bit) & 1 for bit in range(CODE_BITS)], axis=1)
    codes = np.packbits(planes, axis=2).reshape(len(vectors), CODE_BYTES)
    return codes, scales


def levels(codes: np.ndarray) -> np.ndarray:
    """The components of packed ``codes`` in steps (float32, (rows, DIM)), centred on 0:
    -3.5 to 3.5 for three bits."""
    rows = len(codes)
    planes = np.unpackbits(np.asarray(codes).reshape(rows, CODE_BITS, embedder.DIM // 8), axis=2)
    level = planes[:, 0].copy()
    for bit in range(1, CODE_BITS):
        level |= planes[:, bit] << bit
    out: np.ndarray = level.astype(np.float32) - (LEVELS - 1) / 2
    return out


@dataclass
class QuantizedChunk:
    """The word pieces of consecutive intervals, quantized as a table stores them: how many
    pieces each interval has, and their codes and scales, row after row."""

    sizes: np.ndarray  # int64, one per interval
    codes: np.ndarray  # uint8 (sizes.sum(), CODE_BYTES)
    scales: np.ndarray  # float32 (sizes.sum(),)

    @classmethod
    def of(cls, pieces: list[np.ndarray]) -> QuantizedChunk:
        rows = [p for p in pieces if len(p)]
        vectors = np.vstack(rows) if rows else np.zeros((0, embedder.DIM), np.float32)
        sizes = np.array([len(p) for p in pieces], dtype=np.int64)
        return cls(sizes, *quantize(vectors))

    @classmethod
    def joined(cls, chunks: list[QuantizedChunk]) -> QuantizedChunk:
        """One chunk of ``chunks``' intervals, in order."""
        if not chunks:
            return cls.of([])
        return cls(
            np.concatenate([c.sizes for c in chunks]).astype(np.int64),
            np.concatenate([c.codes for c in chunks]).astype(np.uint8),
            np.concatenate([c.scales for c in chunks]).astype(np.float32),
        )

    def pieces(self) -> list[np.ndarray]:
        """Each interval's piece vectors (float32) read back from the codes, as a table reads
        them: quantized again, they give the same codes (see ``quantize``)."""
        rows = levels(self.codes) * self.scales[:, None]
        bounds = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        return [rows[bounds[n] : bounds[n + 1]] for n in range(len(self.sizes))]


class TableWriter:
    """A table written as a full build finds its intervals' pieces, chunk by chunk: each
    chunk's codes go to disk at once (a build of 60,000 intervals would hold 190 MB of them
    until the end), only the sizes and scales (12 bytes a piece) stay in memory. ``close``
    writes the table at ``path`` (new), byte for byte as ``PieceTable.save`` would: numpy's
    header leaves room for the row count to grow in place, so it is written first with none
    and again at the end with the count."""

    CODES = "codes.npy"

    def __init__(self, path: Path):
        path.mkdir()
        self.path = path
        self._codes = open(path / self.CODES, "wb")  # noqa: SIM115 (closed by close/cancel)
        self._header(0)
        self._codes.flush()
        self._head = self._codes.tell()
        self._sizes: list[np.ndarray] = []
        self._scales: list[np.ndarray] = []
        self._rows = 0

    def _header(self, rows: int) -> None:
        header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.uint8)),
                  "fortran_order": False, "shape": (rows, CODE_BYTES)}  # fmt: skip
        np.lib.format.write_array_header_1_0(self._codes, header)

    def add(self, chunk: QuantizedChunk) -> None:
        """The next intervals' pieces (labels follow those added before)."""
        self._codes.write(np.ascontiguousarray(chunk.codes, dtype=np.uint8).tobytes())
        self._codes.flush()
        self._sizes.append(chunk.sizes)
        self._scales.append(chunk.scales)
        self._rows += len(chunk.codes)

    def close(self) -> int:
        """Write the table's files; returns the number of intervals."""
        with self._codes:
            self._codes.seek(0)
            self._header(self._rows)
            if self._codes.tell() != self._head:  # numpy pads for 21 digits: cannot happen
                raise RuntimeError("the word-piece table's header changed length")
        sizes = np.concatenate(self._sizes) if self._sizes else np.zeros(0, np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        scales = np.concatenate(self._scales) if self._scales else np.zeros(0, np.float32)
        arrays = {"labels.npy": np.arange(len(sizes), dtype=np.int64), "starts.npy": starts,
                  "scales.npy": scales.astype(np.float32)}  # fmt: skip
        for name, array in arrays.items():
            with open(self.path / name, "wb") as handle:
                np.save(handle, array, allow_pickle=False)
        return len(sizes)

    def cancel(self) -> None:
        """Stop writing (a failed build): the codes written so far are removed."""
        self._codes.close()
        (self.path / self.CODES).unlink(missing_ok=True)


@dataclass
class PieceTable:
    """Word-piece vectors of a generation's intervals, by interval label (ascending), as packed
    codes with a scale per piece (see ``quantize``)."""

    labels: np.ndarray  # int64, ascending
    starts: np.ndarray  # int64, len(labels) + 1: label i's rows are starts[i]:starts[i + 1]
    codes: np.ndarray  # uint8 (rows, CODE_BYTES), memory-mapped when read from disk
    scales: np.ndarray  # float32 (rows,)

    @classmethod
    def empty(cls) -> PieceTable:
        return cls(
            np.zeros(0, np.int64),
            np.zeros(1, np.int64),
            np.zeros((0, CODE_BYTES), np.uint8),
            np.zeros(0, np.float32),
        )

    @classmethod
    def of(cls, labels: list[int], pieces: list[np.ndarray]) -> PieceTable:
        """A table of ``pieces[i]`` (float vectors) for ``labels[i]`` (any order; a label at
        most once)."""
        if not labels:
            return cls.empty()
        order = np.argsort(np.asarray(labels, dtype=np.int64), kind="stable")
        sizes = np.array([len(pieces[i]) for i in order], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        rows = [pieces[i] for i in order if len(pieces[i])]
        vectors = np.vstack(rows) if rows else np.zeros((0, embedder.DIM), np.float32)
        return cls(np.asarray(labels, dtype=np.int64)[order], starts, *quantize(vectors))

    def __len__(self) -> int:
        return len(self.labels)

    def pieces_of(self, label: int) -> np.ndarray | None:
        """The piece vectors (float32) of interval ``label``, or None if the table lacks it."""
        at = int(np.searchsorted(self.labels, label))
        if at == len(self.labels) or int(self.labels[at]) != label:
            return None
        return self._rows(int(self.starts[at]), int(self.starts[at + 1]))

    def _rows(self, lo: int, hi: int) -> np.ndarray:
        out: np.ndarray = levels(self.codes[lo:hi]) * self.scales[lo:hi, None]
        return out

    def without(self, labels: np.ndarray) -> PieceTable:
        """The table but the intervals ``labels``, its codes kept as they are (never widened
        to floats and quantized again: a merge of the whole index would hold it as floats)."""
        keep = ~np.isin(self.labels, labels)
        sizes = np.diff(self.starts)[keep]
        rows = np.repeat(keep, np.diff(self.starts))
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return PieceTable(self.labels[keep], starts, self.codes[rows], self.scales[rows])

    @classmethod
    def joined(cls, tables: list[PieceTable]) -> PieceTable:
        """One table of ``tables``, whose labels follow each other in ascending order."""
        if not tables:
            return cls.empty()
        starts = [tables[0].starts[:1]]
        offset = 0
        for table in tables:
            starts.append(table.starts[1:] + offset)
            offset += int(table.starts[-1])
        return cls(
            np.concatenate([t.labels for t in tables]).astype(np.int64),
            np.concatenate(starts).astype(np.int64),
            np.concatenate([np.asarray(t.codes) for t in tables]).astype(np.uint8),
            np.concatenate([t.scales for t in tables]).astype(np.float32),
        )

    def save(self, path: Path) -> None:
        """Write the table to the folder ``path`` (new), one .npy file per array, so that a
        reader can memory-map the codes."""
        path.mkdir()
        arrays = (self.labels, self.starts, self.codes, self.scales)
        for name, array in zip(TABLE_FILES, arrays, strict=True):
            with open(path / name, "wb") as handle:
                np.save(handle, np.ascontiguousarray(array), allow_pickle=False)

    @classmethod
    def load(cls, path: Path, count: int) -> PieceTable:
        """The table saved at ``path``, checked to hold ``count`` intervals and to be whole
        (an empty table need not be saved). The codes are memory-mapped: a search reads
        them through the page cache, and a process holds only what it touched."""
        if count == 0 and not path.exists():
            return cls.empty()
        try:
            labels, starts, codes, scales = (
                np.load(path / name, mmap_mode="r" if name == "codes.npy" else None,
                        allow_pickle=False)
                for name in TABLE_FILES
            )  # fmt: skip
        except (OSError, ValueError) as exc:
            raise StorageError(f"the word-piece vectors {path} are damaged: {exc}") from exc
        table = cls(labels.astype(np.int64), starts.astype(np.int64), codes, scales)
        if (
            len(table.labels) != count
            or len(table.starts) != count + 1
            or codes.dtype != np.uint8
            or scales.dtype != np.float32
            or codes.shape != (int(table.starts[-1]), CODE_BYTES)
            or scales.shape != (len(codes),)
            or np.any(np.diff(table.labels) <= 0)
            or np.any(np.diff(table.starts) < 0)
        ):
            raise StorageError(f"the word-piece vectors {path} do not match the index")
        return table

    def scores(self, query: np.ndarray, labels: np.ndarray | None = None) -> np.ndarray:
        """Each interval's late-interaction score for the query's piece vectors (rows of
        ``query``): the mean of each piece's best similarity among the interval's pieces.
        For ``labels`` (one score each, 0 for a label the table lacks), else for the
        table's labels in order. An interval without pieces scores 0. (Every interval is
        scored either way: one product over all pieces costs less than gathering some.)"""
        every = np.zeros(len(self.labels), np.float32)
        sizes = np.diff(self.starts)
        has = sizes > 0
        if len(query) and has.any():
            query = np.asarray(query, dtype=np.float32)
            sims = np.empty((len(query), len(self.codes)), np.float32)
            for lo in range(0, len(self.codes), SCORE_BLOCK):
                hi = min(lo + SCORE_BLOCK, len(self.codes))
                block = levels(self.codes[lo:hi])
                np.multiply(query @ block.T, self.scales[lo:hi], out=sims[:, lo:hi])
            every[has] = np.maximum.reduceat(sims, self.starts[:-1][has], axis=1).mean(axis=0)
        if labels is None:
            return every
        labels = np.asarray(labels, dtype=np.int64)
        out = np.zeros(len(labels), np.float32)
        if len(self.labels):
            at = np.minimum(np.searchsorted(self.labels, labels), len(self.labels) - 1)
            found = self.labels[at] == labels
            out[found] = every[at[found]]
        return out


def query_pieces(query: str) -> np.ndarray:
    """The piece vectors of a query's content words (function words and punctuation left
    out), computed in context, as the model read the whole query."""
    reading = read_query(query)
    out: np.ndarray = reading.pieces[content_rows(reading.names)]
    return out
