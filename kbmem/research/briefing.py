"""Turning the researcher's pool of intervals into a compact, cited briefing.

Pages are chosen first (the best ``max_pages``); then intervals of those pages are taken one
by one, best first (the best interval of each chosen page before any second one, then the rest
by score discounted by their page's rank), until the token budget is spent. A turn is taken
alone: the pool's scores already carry its context (a turn after a matching question scores
too), so the budget goes to turns that earned it rather than to fixed windows around every
hit. Intervals that touch on a page are merged into one window, and each window becomes one
evidence item whose interval cites its exact lines.

The excerpt is what a reader (a person, or a model) gets: a note's lines as written, or a
session's turns rendered compactly — ``<turn id> <speaker> (<when>): <text>``, the time given
once per window and again only when it changes. The text is verbatim; only the turn header
lines are rewritten, so a turn costs a few tokens of framing instead of twenty."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..intervals import Interval
from ..pages import TURN_HEADER, unescape_line
from ..textutil import count_tokens
from ..toolkit import Toolkit
from .state import Candidate, ResearchState
from .types import EvidenceItem

RELATIVE_FLOOR = 0.05  # intervals scoring below this share of the best are left out
PAGE_RANK_DECAY = 0.3  # an interval of the n-th page counts 1 / (1 + 0.3 n) of its score
_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?)?")


@dataclass
class Window:
    """Lines ``start..end`` of one file at one commit, made of the chosen intervals."""

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

    def touches(self, path: str, commit: str, start: int, end: int) -> bool:
        # Intervals of a page are separated by one blank line: touching means adjacent.
        return (
            self.path == path
            and self.commit == commit
            and start <= self.end + 2
            and end >= self.start - 2
        )


def select_evidence(
    toolkit: Toolkit,
    state: ResearchState,
    budget: int,
    facts: Sequence[str] = (),
) -> list[EvidenceItem]:
    """Evidence within ``budget`` tokens (as rendered) from the briefing's pages (the state's
    ``max_pages`` best, see ResearchState.briefing_pages):
    each page's best interval, then the intervals that the key ``facts`` cite (a reader, and
    the agent answering from the evidence, should find the whole turn a fact was cut from),
    then the rest by score."""
    ranked = state.ranked()
    if not ranked:
        return []
    pages = state.briefing_pages()
    allowed = set(pages)
    best = state.effective(ranked[0])
    firsts: dict[str, Candidate] = {}
    for cand in ranked:
        if cand.hit.page_id in allowed and cand.hit.page_id not in firsts:
            firsts[cand.hit.page_id] = cand
    # Each page's best interval, then the turns the key facts cite, in the facts' order.
    order = [firsts[p] for p in pages if p in firsts]
    by_citation = {c.hit.interval.citation(): c for c in reversed(ranked)}
    order += [
        cand
        for fact in facts
        if (cand := by_citation.get(fact.rsplit(" ", 1)[-1])) and cand.hit.page_id in allowed
    ]
    order = list({id(c): c for c in order}.values())
    chosen = {id(c) for c in order}
    rest = [
        c
        for c in ranked
        if c.hit.page_id in allowed
        and id(c) not in chosen
        and state.effective(c) >= RELATIVE_FLOOR * best
    ]
    # Past each page's best interval, the budget goes to an interval by its score and by where
    # its page stands: the second-best turn of the best page before the second-best of the
    # eighth (on LoCoMo, interval coverage 0.804 -> 0.810 at the same tokens).
    page_rank = {p: n for n, p in enumerate(pages)}
    rest.sort(key=lambda c: -state.effective(c) / (1 + PAGE_RANK_DECAY * page_rank[c.hit.page_id]))
    order += rest
    windows: list[Window] = []
    used = 0
    for n, cand in enumerate(order):
        iv = cand.hit.interval
        if iv.kind != "turn":
            iv = toolkit.expand(iv, "paragraph", 0).interval
        touching = [w for w in windows if w.touches(iv.path, iv.commit, iv.start, iv.end)]
        if any(w.start <= iv.start and iv.end <= w.end for w in touching):
            continue  # already inside a chosen window
        lo = min([iv.start] + [w.start for w in touching])
        hi = max([iv.end] + [w.end for w in touching])
        before = sum(_cost(toolkit, w.path, w.commit, w.start, w.end) for w in touching)
        extra = _cost(toolkit, iv.path, iv.commit, lo, hi) - before
        if used + extra > budget:
            continue  # a smaller interval further down may still fit
        score = state.effective(cand)
        if touching:
            keep = touching[0]
            for other in touching[1:]:
                keep.retrievers |= other.retrievers
                keep.score = max(keep.score, other.score)
                keep.order = min(keep.order, other.order)
                windows.remove(other)
            keep.start, keep.end = lo, hi
            keep.score = max(keep.score, score)
            keep.retrievers |= cand.retrievers
        else:
            windows.append(
                Window(
                    iv.path,
                    iv.commit,
                    iv.page_id,
                    cand.hit.session_id,
                    lo,
                    hi,
                    iv.blob,
                    score,
                    set(cand.retrievers),
                    n,
                )
            )
        used += extra
    items = []
    for w in sorted(windows, key=lambda w: (-w.score, w.order)):
        source = _text(toolkit, w.path, w.commit, w.start, w.end)
        turn_ids = tuple(
            m.group(1) for line in source.split("\n") if (m := TURN_HEADER.match(line))
        )
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
        items.append(
            EvidenceItem(
                w.page_id,
                render_excerpt(source),
                w.score,
                retriever,
                interval,
                w.session_id,
                source_text=source,
            )
        )
    return items


def render_excerpt(source: str) -> str:
    """A window's lines as a reader gets them: turns compactly (see the module's docstring),
    any other text exactly as written."""
    lines = source.split("\n")
    if not any(TURN_HEADER.match(line) for line in lines):
        return source
    out: list[str] = []
    body: list[str] = []
    head = ""
    last_when = ""

    def flush() -> None:
        while body and not body[-1].strip():
            body.pop()
        if head:
            first = body[0] if body else ""
            out.append(f"{head}: {first}".rstrip())
            out.extend(body[1:])
        else:
            out.extend(body)
        body.clear()

    for line in lines:
        m = TURN_HEADER.match(line)
        if m is None:
            body.append(unescape_line(line))
            continue
        flush()
        turn_id, speaker, stamp = m.group(1), m.group(2), m.group(3)
        when = short_time(stamp)
        head = f"{turn_id} {speaker}".rstrip()
        if when and when != last_when:
            head += f" ({when})"
            last_when = when
    flush()
    return "\n".join(out)


def short_time(stamp: str) -> str:
    """``2023-05-08T13:56:00`` → ``2023-05-08 13:56``; midnight → the date alone; anything
    else as it is."""
    m = _STAMP.match(stamp)
    if m is None:
        return stamp
    day, clock = m.group(1), m.group(2)
    return day if not clock or clock == "00:00" else f"{day} {clock}"


def _lines(toolkit: Toolkit, path: str, commit: str) -> list[str]:
    return toolkit.file_text(path, commit).split("\n")


def _text(toolkit: Toolkit, path: str, commit: str, start: int, end: int) -> str:
    return "\n".join(_lines(toolkit, path, commit)[start - 1 : end])


def _cost(toolkit: Toolkit, path: str, commit: str, start: int, end: int) -> int:
    """Tokens of lines ``start..end`` as an excerpt renders them."""
    return count_tokens(render_excerpt(_text(toolkit, path, commit, start, end)))


def fit_list(items: list[str], budget: int) -> list[str]:
    out, used = [], 0
    for item in items:
        cost = count_tokens(item)
        if used + cost > budget:
            break
        out.append(item)
        used += cost
    return out
