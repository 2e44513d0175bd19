"""Turning the researcher's pool of intervals into a compact, cited briefing.

Pages are chosen first (the best ``max_pages`` by their intervals); then the best interval of
each chosen page, then the rest by score, each expanded by one turn on either side; windows
that overlap are merged; everything stops at the token budget, deterministically."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..intervals import Interval
from ..pages import TURN_HEADER
from ..textutil import count_tokens
from ..toolkit import Toolkit
from .state import Candidate, ResearchState
from .types import EvidenceItem

RELATIVE_FLOOR = 0.12  # intervals scoring below this share of the best are left out


@dataclass
class Window:
    path: str
    commit: str
    page_id: str
    session_id: str
    start: int
    end: int
    blob: str
    score: float
    retrievers: set[str] = field(default_factory=set)
    order: int = 0


def select_evidence(
    toolkit: Toolkit, state: ResearchState, max_pages: int, budget: int, first_per_page: bool = True
) -> list[EvidenceItem]:
    """Evidence windows within ``budget`` tokens from the best ``max_pages`` pages. A turn
    comes with the turn after it (answers follow questions); a note paragraph comes alone."""
    ranked = state.ranked()
    if not ranked:
        return []
    pages = [p for p, _s in state.page_scores()[:max_pages]]
    allowed = set(pages)
    best = state.effective(ranked[0])
    order: list[Candidate] = []
    if first_per_page:
        firsts: dict[str, Candidate] = {}
        for cand in ranked:
            if cand.hit.page_id in allowed and cand.hit.page_id not in firsts:
                firsts[cand.hit.page_id] = cand
        order = [firsts[p] for p in pages if p in firsts]
    chosen = {id(c) for c in order}
    order += [
        c
        for c in ranked
        if c.hit.page_id in allowed
        and id(c) not in chosen
        and state.effective(c) >= RELATIVE_FLOOR * best
    ]
    windows: list[Window] = []
    used = 0
    for n, cand in enumerate(order):
        iv = cand.hit.interval
        score = state.effective(cand)
        if iv.kind == "turn":
            grown = toolkit.expand(iv, "turn", 1).interval
            ei = replace(grown, start=iv.start)
        else:
            ei = toolkit.expand(iv, "paragraph", 0).interval
        merged = None
        for w in windows:
            if (
                w.path == ei.path
                and w.commit == ei.commit
                and ei.start <= w.end + 1
                and ei.end >= w.start - 1
            ):
                merged = w
                break
        if merged is not None:
            lo, hi = min(merged.start, ei.start), max(merged.end, ei.end)
            extra = _tokens(toolkit, ei.path, ei.commit, lo, hi) - _tokens(
                toolkit, ei.path, ei.commit, merged.start, merged.end
            )
            if used + extra > budget:
                continue
            merged.start, merged.end = lo, hi
            merged.score = max(merged.score, score)
            merged.retrievers |= cand.retrievers
            used += extra
            continue
        cost = _tokens(toolkit, ei.path, ei.commit, ei.start, ei.end)
        if used + cost > budget:
            # Too big with its neighbour: try the interval alone.
            cost = _tokens(toolkit, iv.path, iv.commit, iv.start, iv.end)
            if used + cost > budget:
                continue
            ei = iv
        windows.append(
            Window(
                ei.path,
                ei.commit,
                ei.page_id,
                cand.hit.session_id,
                ei.start,
                ei.end,
                ei.blob,
                score,
                set(cand.retrievers),
                n,
            )
        )
        used += cost
    items = []
    for w in sorted(windows, key=lambda w: (-w.score, w.order)):
        text = _text(toolkit, w.path, w.commit, w.start, w.end)
        lines = text.split("\n")
        turn_ids = tuple(t for t in _turn_ids(lines))
        interval = Interval(
            w.page_id,
            w.path,
            w.start,
            w.end,
            w.commit,
            w.blob,
            "turn" if turn_ids else "paragraph",
            turn_ids,
        )
        retriever = "+".join(sorted(w.retrievers)) or "bm25"
        items.append(EvidenceItem(w.page_id, text, w.score, retriever, interval, w.session_id))
    return items


def _lines(toolkit: Toolkit, path: str, commit: str) -> list[str]:
    return toolkit.file_text(path, commit).split("\n")


def _text(toolkit: Toolkit, path: str, commit: str, start: int, end: int) -> str:
    return "\n".join(_lines(toolkit, path, commit)[start - 1 : end])


def _tokens(toolkit: Toolkit, path: str, commit: str, start: int, end: int) -> int:
    return count_tokens(_text(toolkit, path, commit, start, end))


def _turn_ids(lines: list[str]) -> list[str]:
    return [m.group(1) for line in lines if (m := TURN_HEADER.match(line))]


def fit_list(items: list[str], budget: int) -> list[str]:
    out, used = [], 0
    for item in items:
        cost = count_tokens(item)
        if used + cost > budget:
            break
        out.append(item)
        used += cost
    return out
