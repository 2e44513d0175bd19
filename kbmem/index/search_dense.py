"""Dense search: the query's vector against every interval's vectors (its whole text and, when
it says more than one thing, each sentence; kbmem.index.vectors). The vectors added since the
base graph (the delta) are searched exactly; the base graph approximately, or exactly when a
filter leaves few intervals. An interval scores as its nearest vector."""

from __future__ import annotations

import numpy as np

from kbmem.index import ann
from kbmem.index.generation import Generation
from kbmem.index.hits import Hit, allowed_docs, ranked
from kbmem.index.postings import IndexView
from kbmem.index.vectors import VECTOR_STRIDE, GraphSearch, read_query

# Filtered searches over at most this many intervals read their vectors and compare them all
# (exact, and cached per filter by the generation); larger ones search the graph with a filter.
# On LoCoMo an interval has 3.6 vectors on average, about 22 MB for a filter of EXACT_MAX.
EXACT_MAX = 4096

Found = tuple[list[np.ndarray], list[np.ndarray]]  # vector labels and similarities, in parts


def dense(
    gen: Generation,
    query: str,
    k: int,
    flt: dict[str, str],
    vector: np.ndarray | None,
    tenant: str,
) -> list[Hit]:
    """The ``k`` live intervals passing ``flt`` nearest to ``query`` (or to ``vector``)."""
    if gen.count == 0:
        return []
    view = gen.view()
    allowed = allowed_docs(gen, flt)
    if allowed is not None and len(allowed) == 0:
        return []
    base = gen.base()
    delta_labels, delta_vectors, dead = gen.delta()
    vec = (
        read_query(query).vector
        if vector is None
        else np.asarray(vector, dtype=np.float32).reshape(-1)
    )
    found: Found = ([], [])
    delta_owners = delta_labels // VECTOR_STRIDE
    if len(delta_labels):
        _search_delta(view, allowed, delta_labels, delta_vectors, vec, found)
    if base is not None:
        _search_base(gen, base, allowed, flt, delta_owners, len(dead) > 0, vec, k, found)
    labels, sims = found
    if not labels:
        return []
    all_labels = np.concatenate(labels)
    all_sims = np.concatenate(sims).astype(np.float64)
    docs = view.docs_of(all_labels // VECTOR_STRIDE)
    keep = docs >= 0
    docs, all_sims = docs[keep], all_sims[keep]
    # An interval scores as its nearest vector (its whole text or one of its sentences).
    order = np.argsort(-all_sims, kind="stable")
    docs, all_sims = docs[order], all_sims[order]
    _unique, first = np.unique(docs, return_index=True)
    return ranked(gen, docs[first], all_sims[first], k, "dense", tenant)


def _search_delta(
    view: IndexView,
    allowed: np.ndarray | None,
    delta_labels: np.ndarray,
    delta_vectors: np.ndarray,
    vec: np.ndarray,
    found: Found,
) -> None:
    """Add to ``found`` every delta vector of a live, allowed interval: exact."""
    delta_owners = delta_labels // VECTOR_STRIDE
    ok = view.docs_of(delta_owners) >= 0
    if allowed is not None:
        allowed_labels = view.labels[allowed]
        ok &= np.isin(delta_owners, allowed_labels)
    found[0].append(delta_labels[ok])
    found[1].append(delta_vectors[ok] @ vec)


def _search_base(
    gen: Generation,
    base: ann.Index,
    allowed: np.ndarray | None,
    flt: dict[str, str],
    delta_owners: np.ndarray,
    has_dead: bool,
    vec: np.ndarray,
    k: int,
    found: Found,
) -> None:
    """Add to ``found`` the base graph's nearest vectors of live, allowed intervals that the
    delta does not hold: approximate, or exact over a small filtered set."""
    view = gen.view()
    live = view.live_label_set()

    def alive(label: int) -> bool:
        return label // VECTOR_STRIDE in live

    if allowed is not None:
        wanted = view.labels[allowed]
        wanted = wanted[~np.isin(wanted, delta_owners)]
        if len(wanted) <= EXACT_MAX:
            if len(wanted):
                key = tuple(sorted(flt.items()))
                found_labels, items = gen.vectors_of(key, wanted, base)
                found[0].append(found_labels)
                found[1].append(items @ vec)
        else:
            wanted_set = set(wanted.tolist())
            near = GraphSearch(
                base, lambda label: label // VECTOR_STRIDE in wanted_set, alive
            ).intervals(vec, k)
            found[0].append(near[0])
            found[1].append(near[1])
    elif view.n_live > len(np.unique(delta_owners)):
        check = alive if has_dead else None
        near = GraphSearch(base, check, alive).intervals(vec, k)
        found[0].append(near[0])
        found[1].append(near[1])
