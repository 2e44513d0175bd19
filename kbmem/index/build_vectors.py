"""The vectors a build stores for intervals: every vector of each interval's texts
(kbmem.index.vectors.vector_texts) and the word pieces of its whole text (kbmem.index.late),
embedded in large calls, or, for an incremental build, taken from the intervals it replaces
where their texts did not change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kbmem.index import embedder
from kbmem.index.generation import Generation
from kbmem.index.intervals import IntervalText
from kbmem.index.late import content_rows
from kbmem.index.vectors import read_texts, vector_labels, vector_texts

# Texts per call of the model: a checkpoint's chunk (kbmem.index.checkpoint; 400 intervals,
# at most 927 texts in the scale benchmark's 2,000 pages) in one call. The readers wait for
# each other at the end of a call, and a call's batches spread its pieces evenly among them
# only within the call. A call's readings are held until it ends (a text's word pieces
# included): a larger call would hold more.
EMBED_CALL = 1024
# A small build (the example's 1,099 texts) is embedded in about this many calls instead, so
# that its progress shows counts and an estimate before it is nearly done. Counted on the
# whole build's texts, not the chunk's: a large build's chunks were read 256 texts a call.
SMALL_BUILD_CALLS = 8
SMALL_CALL_MIN = 256

Embedded = tuple[np.ndarray, np.ndarray, list[np.ndarray]]  # vectors, counts, word pieces


def embed(
    texts: list[list[str]],
    progress: Callable[[int, int], None] | None,
    done: int = 0,
    total: int = 0,
) -> Embedded:
    """The vectors of intervals whose ``vector_texts`` are ``texts``, in order, how many
    each has, and the word-piece vectors of each one's whole text (its first; content words
    only; progress is reported in intervals, from ``done`` of ``total``). A text that comes
    back ("Thanks!", a sentence quoted again) is embedded once."""
    counts = np.array([len(t) for t in texts], dtype=np.int64)
    flat = [t for ts in texts for t in ts]
    firsts = set((np.cumsum(counts) - counts).tolist())
    wholes = {flat[n] for n in firsts}
    known: dict[str, np.ndarray] = {}
    known_pieces: dict[str, np.ndarray] = {}
    chunks = []
    pieces: list[np.ndarray] = []
    ends = np.cumsum(counts)
    # The build's texts, from this chunk's share of its intervals.
    build_texts = len(flat) * max(total, len(counts)) // max(len(counts), 1)
    step = min(EMBED_CALL, max(SMALL_CALL_MIN, -(-build_texts // SMALL_BUILD_CALLS)))
    if progress:
        progress(done, total or len(counts))  # the total, before the first call's wait
    with embedder.bulk(len(flat)):
        for i in range(0, len(flat), step):
            part = flat[i : i + step]
            fresh = [t for t in dict.fromkeys(part) if t not in known]
            for text, reading in zip(fresh, read_texts(fresh), strict=True):
                known[text] = reading.vector
                if text in wholes:
                    # Only content words' pieces: a query scores by its content words' alone.
                    known_pieces[text] = reading.pieces[content_rows(reading.names)]
            chunks.append(np.vstack([known[t] for t in part]))
            pieces += [known_pieces[t] for n, t in enumerate(part, start=i) if n in firsts]
            if progress:
                finished = int(np.searchsorted(ends, min(i + step, len(flat)), side="right"))
                progress(done + finished, total or len(counts))
    vectors = np.vstack(chunks) if chunks else np.zeros((0, embedder.DIM), np.float32)
    return vectors.astype(np.float32), counts, pieces


def _known_vectors(
    gen: Generation, dropped_docs: list[dict[str, Any]]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The vectors (by text) and word pieces (by whole text) that ``gen`` holds for the
    intervals ``dropped_docs``, as far as it still holds them."""
    known: dict[str, np.ndarray] = {}
    known_pieces: dict[str, np.ndarray] = {}
    if not dropped_docs:
        return known, known_pieces
    for doc in dropped_docs:
        found = gen.pieces_of(int(doc["label"]))
        if found is not None:
            known_pieces[doc["content"]] = found
    delta_labels, delta_vectors, _dead = gen.delta()
    in_delta = {int(label): i for i, label in enumerate(delta_labels)}
    base = gen.base()
    for doc in dropped_docs:
        texts = vector_texts(doc["content"], doc.get("speaker") or "")
        labels = vector_labels(np.array([int(doc["label"])]), np.array([len(texts)])).tolist()
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
    return known, known_pieces


def embed_reusing(
    gen: Generation,
    dropped_docs: list[dict[str, Any]],
    items: list[IntervalText],
    progress: Callable[[int, int], None] | None,
    embedding: Callable[[list[list[str]], Callable[[int, int], None] | None], Embedded] = embed,
) -> Embedded:
    """Vectors for ``items`` (as ``embed``, or ``embedding``: a build's checkpoints),
    embedding only texts that the dropped intervals did not already have: an edited page (a
    growing chat above all) keeps most of its turns, and re-embedding them would make a
    one-turn change cost the whole page."""
    known, known_pieces = _known_vectors(gen, dropped_docs)
    texts = [vector_texts(it.text, it.speaker) for it in items]
    counts = np.array([len(t) for t in texts], dtype=np.int64)
    flat = [t for ts in texts for t in ts]
    wholes = [ts[0] for ts in texts]
    fresh = list(
        dict.fromkeys(
            [t for t in flat if t not in known] + [t for t in wholes if t not in known_pieces]
        )
    )
    vectors, _counts, fresh_pieces = embedding([[t] for t in fresh], progress)
    known.update(zip(fresh, vectors, strict=True))
    known_pieces.update(zip(fresh, fresh_pieces, strict=True))
    pieces = [known_pieces[t] for t in wholes]
    if not flat:
        return np.zeros((0, embedder.DIM), np.float32), counts, pieces
    return np.vstack([known[t] for t in flat]).astype(np.float32), counts, pieces
