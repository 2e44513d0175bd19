"""What an incremental build keeps beside the base graph and the base word-piece table, and
when it folds that into new bases.

The new intervals' vectors go to a small delta beside the base graph, together with the labels
of base intervals that died; searches read the base graph (approximate) plus the delta
(exact). Once the delta grows past a threshold, a build folds it into a new base graph (dead
vectors are marked deleted, and their slots are reused by new ones). Word pieces do the same
with their own delta table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kbmem.index.generation import Generation
from kbmem.index.late import LATE_DELTA_FILE, LATE_FILE, TABLE_FILES, PieceTable
from kbmem.index.layout import link
from kbmem.index.vectors import VECTOR_STRIDE, load_vectors, save_base

# Vectors (added, plus dead labels) kept beside the base graph before they are folded into it:
# a search compares every delta vector, and a sync rewrites the delta.
DELTA_MAX = 4096
DELTA_SHARE = 0.05  # ...or this share of the base graph, whichever is larger
# Intervals whose word pieces are kept beside the base table before they are folded into a new
# one (or DELTA_SHARE of the base): a sync rewrites the delta, about 8 KB an interval.
LATE_DELTA_MAX = 512
GROWTH = 1.25  # a full graph grows by this factor (plus GROWTH_SLACK slots), not one at a time
GROWTH_SLACK = 16

Delta = tuple[np.ndarray, np.ndarray, np.ndarray]  # vector labels, vectors, dead interval labels


def next_delta(
    gen: Generation, dropped: np.ndarray, labels: np.ndarray, vectors: np.ndarray
) -> Delta:
    """``gen``'s delta without the vectors of the ``dropped`` intervals (those in the base die
    instead) and with the new ``labels``' ``vectors``."""
    delta_labels, delta_vectors, dead = gen.delta()
    owners = delta_labels // VECTOR_STRIDE
    in_delta = np.isin(dropped, owners)
    keep = ~np.isin(owners, dropped)
    return (
        np.concatenate([delta_labels[keep], labels]),
        np.vstack([delta_vectors[keep], vectors.astype(np.float32)]),
        np.union1d(dead, dropped[~in_delta]),
    )


def should_fold(delta: Delta, base_count: int) -> bool:
    """Whether the delta has outgrown DELTA_MAX (or DELTA_SHARE of the base graph)."""
    return len(delta[0]) + len(delta[2]) > max(DELTA_MAX, DELTA_SHARE * base_count)


def fold_delta(gen: Generation, path: Path, delta: Delta) -> dict[str, Any]:
    """A new base graph written to ``path``: ``gen``'s (a private copy) with the dead marked
    deleted and the delta added into free or deleted slots. Returns the meta's vector fields."""
    labels, vectors, dead = delta
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
            index.resize_index(int(needed * GROWTH) + GROWTH_SLACK)
        index.add_items(vectors, labels, replace_deleted=True)
        marked -= reusable
    out = save_base(index, path / "vectors.hnsw")
    out["marked_deleted"] = max(0, marked)
    return out


def next_pieces(
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
        PieceTable.of(base_kept + labels, base_pieces + kept_pieces + pieces).save(path / LATE_FILE)
        return {"base": len(base_kept) + len(labels), "delta": 0}
    if len(base):
        (path / LATE_FILE).mkdir()
        for name in TABLE_FILES:
            link(gen.path / LATE_FILE / name, path / LATE_FILE / name)
    if labels:
        PieceTable.of(labels, kept_pieces + pieces).save(path / LATE_DELTA_FILE)
    return {"base": len(base), "delta": len(labels)}
