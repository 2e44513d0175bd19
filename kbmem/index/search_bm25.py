"""Keyword search: BM25 scored with numpy over Whoosh's postings and field lengths (read by
``kbmem.index.postings``), counting live intervals only, so an index that was synced
incrementally (with deletions still inside segments) scores exactly like a fresh build, and a
query costs a few array operations rather than a Python call per matching document. Intervals
are ranked one by one, or pages as whole documents."""

from __future__ import annotations

import math

import numpy as np

from kbmem.index.generation import Generation
from kbmem.index.hits import Hit, allowed_docs, ranked, term_postings
from kbmem.index.postings import segment_leaves

# Lucene's and Whoosh's defaults: how far a long interval's term counts are discounted (B), and
# how soon repeating a term stops adding to the score (K1).
BM25_B = 0.75
BM25_K1 = 1.2


def page_idf(pages: int, having: int) -> float:
    """How much a term says about which page is meant, held by ``having`` of ``pages``
    pages: Robertson and Spärck Jones's weight, as Lucene's BM25 has it, which falls to
    nearly nothing for a term every page holds. The names of the two people of a
    conversation are on every page of it; with the floor of 1 that Whoosh's formula gives
    such a term, a name scored about a quarter of a rare word, and the long pages where the
    name occurs most outranked the pages that held what was asked. (Intervals keep
    Whoosh's weight: there a name still tells whose turn it is.)"""
    return math.log(1.0 + (pages - having + 0.5) / (having + 0.5))


def bm25(gen: Generation, terms: list[str], k: int, flt: dict[str, str], tenant: str) -> list[Hit]:
    """The ``k`` live intervals that pass ``flt`` and score best for the index ``terms``."""
    if gen.count == 0:
        return []
    view = gen.view()
    allowed = allowed_docs(gen, flt)
    if allowed is not None and len(allowed) == 0:
        return []
    leaves = segment_leaves(gen.searcher().reader())
    scores = np.zeros(len(view.live), dtype=np.float64)
    n_live = view.n_live
    for term in terms:
        ids, weights = term_postings(leaves, "text", term)
        live = view.live[ids]
        ids, weights = ids[live], weights[live]
        if len(ids) == 0:
            continue
        idf = math.log(n_live / (len(ids) + 1)) + 1.0
        norm = BM25_K1 * ((1 - BM25_B) + BM25_B * view.lengths[ids] / view.avg_length)
        scores[ids] += idf * (weights * (BM25_K1 + 1)) / (weights + norm)
    docs = np.flatnonzero(scores > 0) if allowed is None else allowed[scores[allowed] > 0]
    return ranked(gen, docs, scores[docs], k, "bm25", tenant)


def bm25_pages(
    gen: Generation, terms: list[str], k: int, flt: dict[str, str]
) -> list[tuple[str, float]]:
    """Pages ranked by BM25 over each page's text as one document (the sum of its live
    intervals' term counts and lengths that pass ``flt``), best ``k`` first."""
    if gen.count == 0:
        return []
    view = gen.view()
    names, page_of, lengths = view.pages(gen.searcher().reader())
    allowed = allowed_docs(gen, flt)
    keep = view.live.copy() if allowed is None else np.zeros(len(view.live), dtype=bool)
    if allowed is not None:
        keep[allowed] = True
    n_pages = int(np.count_nonzero(lengths))
    avg = float(lengths.sum() / n_pages) if n_pages else 1.0
    leaves = segment_leaves(gen.searcher().reader())
    scores = np.zeros(len(names), dtype=np.float64)
    for term in terms:
        ids, weights = term_postings(leaves, "text", term)
        ok = keep[ids] & (page_of[ids] >= 0)
        if not ok.any():
            continue
        tf = np.bincount(page_of[ids[ok]], weights=weights[ok], minlength=len(names))
        has = tf > 0
        idf = page_idf(n_pages, int(has.sum()))
        norm = BM25_K1 * ((1 - BM25_B) + BM25_B * lengths[has] / (avg or 1.0))
        scores[has] += idf * (tf[has] * (BM25_K1 + 1)) / (tf[has] + norm)
    order = np.flatnonzero(scores > 0)
    found = sorted(((names[i], float(scores[i])) for i in order), key=lambda x: (-x[1], x[0]))
    return found[:k]
