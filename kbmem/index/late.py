"""Late interaction: an interval scored by how near each content word of a query comes to
its nearest word piece in the interval (the mean over the query's pieces of their best cosine
similarity, "MaxSim" as ColBERT scores), over the word-piece vectors that the embedding model
computes on its way to the one vector of a text.

One vector of a turn averages everything said in it, and a question rarely says it the way
the answer did. Scored piece by piece, "What martial arts has John done?" finds "kick ##box
##ing" near "martial" and "arts", where the pooled vector of a long turn about his week does
not (docs/benchmarks.md has what this gains on LoCoMo).

A generation keeps its intervals' piece vectors as the vectors are kept: a base table
``late.npz`` (float16; a label's rows from ``starts[i]`` to ``starts[i + 1]``), shared by hard
link with the generations after it, and a small ``late-delta.npz`` of the intervals added since;
an incremental sync rewrites only the delta, and folds it into a new base once it grows. An
interval that died stays in the base until then (a search keeps to live intervals). A search
scores every interval of the tenant exactly, with no approximate index: one matrix product
of the query's pieces with the table's."""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kbmem.errors import StorageError
from kbmem.index import embedder
from kbmem.index.vectors import read_query

LATE_FILE = "late.npz"
LATE_DELTA_FILE = "late-delta.npz"
# Words that carry no content of their own: a query's pieces of these are not scored (every
# turn has a piece near "the" or "did").
FUNCTION_WORDS = frozenset(
    """a an the of to in on at for with and or but is are was were be been do does did has have
    had what which who whom when where why how that this these those it its i you he she they
    we my your his her their our me him them us as by from about into than then so not no yes
    can could would should will shall may might must there here any some all both each more
    most other such only own same too very just also if""".split()
)
_CONTENT = re.compile(r"[^\W_]", re.UNICODE)


@dataclass
class PieceTable:
    """Word-piece vectors of a generation's intervals, by interval label (ascending)."""

    labels: np.ndarray  # int64, ascending
    starts: np.ndarray  # int64, len(labels) + 1: label i's rows are starts[i]:starts[i + 1]
    vectors: np.ndarray  # (rows, DIM)

    @classmethod
    def empty(cls) -> PieceTable:
        return cls(
            np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros((0, embedder.DIM), np.float32)
        )

    @classmethod
    def of(cls, labels: list[int], pieces: list[np.ndarray]) -> PieceTable:
        """A table of ``pieces[i]`` for ``labels[i]`` (any order; a label at most once)."""
        if not labels:
            return cls.empty()
        order = np.argsort(np.asarray(labels, dtype=np.int64), kind="stable")
        sizes = np.array([len(pieces[i]) for i in order], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        rows = [pieces[i] for i in order if len(pieces[i])]
        vectors = np.vstack(rows) if rows else np.zeros((0, embedder.DIM), np.float16)
        return cls(np.asarray(labels, dtype=np.int64)[order], starts, vectors)

    def __len__(self) -> int:
        return len(self.labels)

    def pieces_of(self, label: int) -> np.ndarray | None:
        """The piece vectors of interval ``label``, or None if the table lacks it."""
        at = int(np.searchsorted(self.labels, label))
        if at == len(self.labels) or int(self.labels[at]) != label:
            return None
        return self.vectors[self.starts[at] : self.starts[at + 1]]

    def without(self, labels: np.ndarray) -> tuple[list[int], list[np.ndarray]]:
        """The table's labels but ``labels``, and their piece vectors."""
        kept = self.labels[~np.isin(self.labels, labels)]
        rows = np.searchsorted(self.labels, kept)
        return kept.tolist(), [self.vectors[self.starts[r] : self.starts[r + 1]] for r in rows]

    def save(self, path: Path) -> None:
        with open(path, "wb") as handle:
            np.savez(
                handle,
                labels=self.labels,
                starts=self.starts,
                vectors=self.vectors.astype(np.float16),
            )

    @classmethod
    def load(cls, path: Path, count: int) -> PieceTable:
        """The table saved at ``path``, checked to hold ``count`` intervals and to be whole
        (an empty table need not be saved)."""
        if count == 0 and not path.exists():
            return cls.empty()
        try:
            with np.load(path, allow_pickle=False) as data:
                table = cls(
                    data["labels"].astype(np.int64),
                    data["starts"].astype(np.int64),
                    data["vectors"].astype(np.float32),  # float32 products are the fast ones
                )
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            raise StorageError(f"the word-piece vectors {path} are damaged: {exc}") from exc
        if (
            len(table.labels) != count
            or len(table.starts) != count + 1
            or table.vectors.shape != (int(table.starts[-1]), embedder.DIM)
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
            sims = query @ self.vectors.T  # (query pieces, all pieces)
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
    keep = [
        n
        for n, name in enumerate(reading.names)
        if _CONTENT.search(name) and name.lstrip("#").lower() not in FUNCTION_WORDS
    ]
    return reading.pieces[keep]
