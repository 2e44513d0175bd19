"""What every search mode shares: checking a query and its filters, the query's terms, the
postings of a term across segments, the documents a filter allows, and the ranked ``Hit`` list
a search returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from whoosh.reading import SegmentReader

from kbmem.errors import StorageError, ValidationError
from kbmem.index.intervals import Interval
from kbmem.index.postings import ANALYZER, cached_postings, segment_leaves

if TYPE_CHECKING:
    from kbmem.index.generation import Generation

# -- limits of a request ------------------------------------------------------------------------
MAX_K = 1000  # the most hits one search returns: a caller wanting more is reading, not searching
MAX_QUERY_TERMS = 256  # terms of a query beyond this say nothing a search could rank by
# A hit's excerpt is the start of its interval: a 10 MB turn must not travel whole in every
# search result (the interval, read with the toolkit, gives all of it).
EXCERPT_CHARS = 2000
FILTER_FIELDS = ("session", "page", "tags", "classification", "kind", "speaker")
# Ties of a huge size are cut to the best-scored k + TIE_SLACK before their stored fields are
# read (a key order among them costs a read per document).
TIE_SLACK = 256


@dataclass
class Hit:
    """One retrieved interval (the Summit ``SearchResult`` plus the interval)."""

    page_id: str
    session_id: str
    tenant_id: str
    interval: Interval
    score: float
    retriever: str  # bm25 | dense | hybrid
    excerpt: str
    speaker: str = ""
    timestamp: str = ""
    ranks: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pageId": self.page_id,
            "sessionId": self.session_id,
            "tenantId": self.tenant_id,
            "score": round(float(self.score), 6),
            "retrieverType": self.retriever,
            "excerpt": self.excerpt,
            "speaker": self.speaker,
            "timestamp": self.timestamp,
            "interval": self.interval.to_dict(),
        }


def analyze(query: str) -> list[str]:
    """The query's distinct index terms, in order: plain text only, never query syntax."""
    seen: dict[str, None] = {}
    for token in ANALYZER(query):
        seen.setdefault(token.text, None)
        if len(seen) >= MAX_QUERY_TERMS:
            break
    return list(seen)


def check_query(query: object, k: object) -> tuple[str, int]:
    """``query`` and ``k`` if they are a non-empty text and a whole number in range, else a
    ValidationError naming the one that is not."""
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("must be non-empty text", "query")
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0 or k > MAX_K:
        raise ValidationError(f"must be a whole number from 1 to {MAX_K}, got {k!r}", "k")
    return query, k


def check_filters(filters: dict[str, Any] | None) -> dict[str, str]:
    """The filters as index terms (tags lower-cased, as the index keeps them), or a
    ValidationError naming the unknown field or the bad value."""
    if filters is not None and not isinstance(filters, dict):
        raise ValidationError("must be a mapping of field to value", "filters")
    out = {}
    for name, value in (filters or {}).items():
        if name not in FILTER_FIELDS:
            raise ValidationError(
                f"unknown filter (known: {', '.join(FILTER_FIELDS)})", f"filters.{name}"
            )
        if not isinstance(value, str) or not value.strip():
            raise ValidationError("must be non-empty text", f"filters.{name}")
        out[name] = value.strip().lower() if name == "tags" else value
    return out


def excerpt(text: str) -> str:
    """The start of ``text``, at most EXCERPT_CHARS characters (marked when cut)."""
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS].rstrip() + " …"


def make_hit(doc: dict[str, Any], score: float, retriever: str, tenant: str) -> Hit:
    """The hit of one stored document of ``tenant``'s index."""
    if doc.get("tenant") != tenant:
        # The index's meta names this tenant, so this is a damaged or tampered index: the
        # read fails and the index is rebuilt, rather than leak another tenant's text.
        raise StorageError(
            f"the index of tenant {tenant!r} holds an interval of {doc.get('tenant')!r}"
        )
    iv = Interval(
        doc["page"],
        doc["path"],
        int(doc["start"]),
        int(doc["end"]),
        doc.get("commit", ""),
        doc.get("blob", ""),
        doc.get("kind", ""),
        tuple(doc.get("turns") or ()),
    )
    return Hit(
        doc["page"],
        doc.get("session", ""),
        tenant,
        iv,
        float(score),
        retriever,
        excerpt(doc.get("content", "")),
        doc.get("speaker", ""),
        doc.get("timestamp", ""),
    )


def term_postings(
    leaves: list[tuple[SegmentReader, int]], fieldname: str, term: str
) -> tuple[np.ndarray, np.ndarray]:
    """Global document numbers and weights of a term across all segments."""
    ids, weights = [], []
    for leaf, offset in leaves:
        leaf_ids, leaf_weights = cached_postings(leaf, fieldname, term)
        ids.append(leaf_ids.astype(np.int64) + offset)
        weights.append(leaf_weights)
    if not ids:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    return np.concatenate(ids), np.concatenate(weights).astype(np.float64)


def allowed_docs(gen: Generation, flt: dict[str, str]) -> np.ndarray | None:
    """Global document numbers (live) that pass every filter, or None for no filter."""
    if not flt:
        return None
    view = gen.view()
    allowed: np.ndarray | None = None
    leaves = segment_leaves(gen.searcher().reader())
    for name, value in flt.items():
        found = term_postings(leaves, name, value)[0]
        allowed = found if allowed is None else np.intersect1d(allowed, found)
    assert allowed is not None
    out: np.ndarray = allowed[view.live[allowed]]
    return out


def ranked(
    gen: Generation, docs: np.ndarray, scores: np.ndarray, k: int, retriever: str, tenant: str
) -> list[Hit]:
    """The best ``k`` documents by score; ties broken by interval key, so that equal
    scores come out in the same order however the index was built."""
    if len(docs) == 0:
        return []
    if len(docs) > k:
        cut = np.partition(scores, len(scores) - k)[len(scores) - k]
        pick = np.flatnonzero(scores >= cut)
        if len(pick) > k + TIE_SLACK:  # a huge tie: keep the best-scored, then any
            pick = pick[np.argsort(-scores[pick], kind="stable")[: k + TIE_SLACK]]
        docs, scores = docs[pick], scores[pick]
    searcher = gen.searcher()
    found = [(float(s), searcher.stored_fields(int(d))) for d, s in zip(docs, scores, strict=True)]
    found.sort(key=lambda item: (-item[0], item[1]["key"]))
    return [make_hit(doc, s, retriever, tenant) for s, doc in found[:k]]
