"""What an incremental build keeps beside the base graph and the base word-piece table, and
when it folds that into new bases.

The new intervals' vectors go to a small delta beside the base graph, together with the labels
of base intervals that died; searches read the base graph (approximate) plus the delta
(exact). The delta is a list of segments: a sync writes one of its own and links the others,
and segments merge by size as the word-piece tables do, so a one-page sync writes what it
added, not the delta. Once the delta grows past a threshold, a build folds it into a new base
graph (dead vectors are marked deleted, and their slots are reused by new ones). Word pieces
do the same with their own tables."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import numpy as np

from kbmem.index import ann
from kbmem.index.generation import Generation
from kbmem.index.late import LATE_FILE, TABLE_FILES, PieceTable
from kbmem.index.layout import link
from kbmem.index.vectors import (
    DELTA_FILES,
    VECTOR_STRIDE,
    DeltaSegment,
    load_vectors,
    save_base,
)

# Vectors (added, plus dead labels) kept beside the base graph before they are folded into it:
# a search compares every delta vector.
DELTA_MAX = 4096
DELTA_SHARE = 0.05  # ...or this share of the base graph, whichever is larger
# Intervals whose word pieces are kept in tables beside the base table before they are folded
# into a new one (or DELTA_SHARE of the base): a search scores every table.
LATE_DELTA_MAX = 512
GROWTH = 1.25  # a full graph grows by this factor (plus GROWTH_SLACK slots), not one at a time
GROWTH_SLACK = 16

Delta = tuple[np.ndarray, np.ndarray, np.ndarray]  # vector labels, vectors, dead interval labels


def next_delta(
    gen: Generation, dropped: np.ndarray, labels: np.ndarray, vectors: np.ndarray
) -> DeltaSegment:
    """The delta segment of a sync that removes the ``dropped`` intervals from ``gen`` and
    adds the new ``labels``' ``vectors``: only the labels of ``gen``'s segments are read."""
    owners = [seg.labels // VECTOR_STRIDE for seg in gen.delta_segments()]
    in_delta = np.isin(dropped, np.concatenate(owners)) if owners else np.zeros(len(dropped), bool)
    return DeltaSegment(
        np.asarray(labels, np.int64),
        vectors.astype(np.float32),
        np.unique(dropped[~in_delta]),
        np.unique(dropped[in_delta]),
    )


def should_fold(gen: Generation, new: DeltaSegment, base_count: int) -> bool:
    """Whether the delta, with ``new``, has outgrown DELTA_MAX (or DELTA_SHARE of the base
    graph). Vectors of removed intervals count until a merge drops them."""
    vec = gen.meta["vectors"]
    size = int(vec["delta"]) + int(vec["dead"]) + len(new.labels) + len(new.dead)
    return size > max(DELTA_MAX, DELTA_SHARE * base_count)


def whole_delta(gen: Generation, new: DeltaSegment) -> Delta:
    """``gen``'s segments and ``new`` as one delta, for folding into a new base graph."""
    whole = DeltaSegment.merged([*gen.delta_segments(), new])
    return whole.labels, np.asarray(whole.vectors), np.unique(whole.dead)


def next_segments(gen: Generation, path: Path, new: DeltaSegment) -> list[list[Any]]:
    """The delta segments of the generation after ``gen``, in ``path``: ``gen``'s shared by
    hard link, plus ``new`` (if it holds anything), the last two merged while the newest is at
    least half the size of the one before (so each vector is rewritten a logarithmic number
    of times). Returns the meta's ``deltas`` entries."""
    names = [str(name) for name, _count, _dead in gen.meta["vectors"]["deltas"]]
    parts: list[tuple[str, DeltaSegment]] = list(zip(names, gen.delta_segments(), strict=True))
    if new.size():
        parts.append(("", new))
    while len(parts) >= 2 and 2 * parts[-1][1].size() >= parts[-2][1].size():
        parts[-2:] = [("", DeltaSegment.merged([parts[-2][1], parts[-1][1]]))]
    out: list[list[Any]] = []
    for name, seg in parts:
        if name:
            (path / name).mkdir()
            for file in DELTA_FILES:
                link(gen.path / name / file, path / name / file)
        else:  # written by this sync
            first = int(seg.labels[0]) // VECTOR_STRIDE if len(seg.labels) else 0
            name = f"delta-{first}-{uuid.uuid4().hex[:8]}"
            seg.save(path / name)
        out.append([name, len(seg.labels), len(seg.dead)])
    return out


def fold_delta(gen: Generation, path: Path, delta: Delta) -> tuple[dict[str, Any], ann.Index]:
    """A new base graph written to ``path``: ``gen``'s (a private copy, since searches of
    ``gen`` read the shared one meanwhile) with the dead marked deleted and the delta added
    into free or deleted slots. Returns the meta's vector fields and the new graph."""
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
    return out, index


def next_pieces(
    gen: Generation,
    path: Path,
    dropped: np.ndarray,
    first: int,
    pieces: list[np.ndarray],
) -> dict[str, Any]:
    """The word-piece tables of the generation after ``gen``, written to ``path``: ``gen``'s
    tables shared by hard link, plus one new table of the new intervals (labels from
    ``first``). Tables are never rewritten for an interval that dies (a search keeps to live
    intervals); they are merged, without their dead intervals, when the newest is at least
    half the size of the one before (so a one-page sync writes its own pieces, and each
    interval is rewritten a logarithmic number of times), and all folded into one new base
    once the tables after the base outgrow LATE_DELTA_MAX intervals or DELTA_SHARE of the
    base. Returns the meta's ``late`` fields."""
    # A table is read only to be merged: a sync that merges nothing reads no table, and no
    # view of the whole index.
    tables: list[tuple[str, int, PieceTable | None]] = [
        (str(name), int(count), None) for name, count in gen.meta["late"]["tables"]
    ]
    if pieces:
        new = PieceTable.of(list(range(first, first + len(pieces))), pieces)
        tables.append(("", len(new), new))

    def live(name: str, count: int, table: PieceTable | None) -> PieceTable:
        if table is None:
            table = PieceTable.load(gen.path / name, count)
        dead = (gen.view().docs_of(table.labels) < 0) & (table.labels < first)
        dead |= np.isin(table.labels, dropped)
        return table.without(table.labels[dead])

    def merged(parts: list[tuple[str, int, PieceTable | None]]) -> tuple[str, int, PieceTable]:
        table = PieceTable.joined([live(*part) for part in parts])
        return "", len(table), table

    base_size = tables[0][1] if tables else 0
    later = sum(count for _name, count, _table in tables[1:])
    if tables and later > max(LATE_DELTA_MAX, DELTA_SHARE * base_size):
        tables = [merged(tables)]
    while len(tables) >= 3 and 2 * tables[-1][1] >= tables[-2][1]:
        tables[-2:] = [merged(tables[-2:])]
    out: list[list[Any]] = []
    for n, (name, count, table) in enumerate(tables):
        if table is not None:  # written by this sync
            name = LATE_FILE if n == 0 else f"{LATE_FILE}-{first}-{uuid.uuid4().hex[:8]}"
            table.save(path / name)
        elif count:
            (path / name).mkdir()
            for file in TABLE_FILES:
                link(gen.path / name / file, path / name / file)
        out.append([name, count])
    counts = [count for _name, count in out]
    return {"base": counts[0] if counts else 0, "delta": sum(counts[1:]), "tables": out}
