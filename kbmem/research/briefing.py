"""Turning the researcher's pool of intervals into a compact, cited briefing.

Pages are chosen first (the best ``max_pages``); then intervals of those pages are taken one
by one, best first (the best interval of each chosen page before any second one, then the rest
by score discounted by their page's rank), until the token budget is spent. A turn is taken
alone: the pool's scores already carry its context (a turn after a matching question scores
too), so the budget goes to turns that earned it rather than to fixed windows around every
hit. Intervals that touch on a page are merged into one window, and each window becomes one
evidence item whose interval cites its exact lines. A page's best interval, or the turn a
key fact was cut from, that is one turn too long for what is left of the budget is carried in
part: the sentences that hold the request's words, "…" marking what is left out, its interval
still citing the whole turn. So is such a turn that is longer than a quarter of the budget.

The excerpt is what a reader (a person, or a model) gets: a note's lines as written, or a
session's turns rendered compactly — ``<turn id> <speaker> (<when>): <text>``, the time given
once per window and again only when it changes. The text is verbatim; only the turn header
lines are rewritten, so a turn costs a few tokens of framing instead of twenty."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from kbmem.index.intervals import Interval
from kbmem.index.tenant import analyze
from kbmem.research.state import Candidate, ResearchState
from kbmem.research.toolkit import Toolkit
from kbmem.research.types import EvidenceItem
from kbmem.store.pages import TURN_HEADER, unescape_line
from kbmem.textutil import CLAUSE_BREAK, PIECE_BREAK, count_tokens, truncate_tokens

# Below this many tokens left, a turn too long for the budget is not carried in part.
MIN_TRIM_TOKENS = 30
# ...and the part carried takes at most a tenth of the budget, which is left to the other
# pages' best intervals, or TRIM_TOKENS if that is more: a key fact quotes up to 40 tokens of
# a sentence (see OfflineEngine.integrate), and the turn's header and "…" take the rest. (A
# quarter of the budget left no room for the turn of the second key fact on the example
# knowledge base.)
TRIM_SHARE = 10
TRIM_TOKENS = 60
# A page's best turn, or one a key fact cites, longer than this share of the budget and
# LONG_TOKENS (a meeting's summary, a pasted log) is carried in part even where it would fit:
# whole, the Q1 retrospective's 408-token summary left no room for the turn that the second
# key fact cited, and the answer could not quote it.
LONG_SHARE = 4
LONG_TOKENS = 200
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
    # A turn too long for the budget is carried in part (see _trimmed): its lines as the
    # excerpt shows them (the rest blanked, so that lines still map to the file) and the
    # excerpt. None: the lines whole.
    trimmed: tuple[str, str] | None = None

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
    each page's best interval, then the intervals that stand for words of the request (see
    ResearchState.cover), then the intervals that the key ``facts`` cite (a reader, and
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
    # Each page's best interval, then those that stand for words of the request which only a
    # follow-up search found (see ResearchState.cover), then the turns the key facts cite, in
    # the facts' order.
    order = [firsts[p] for p in pages if p in firsts]
    order += [
        cand
        for key in state.covering.values()
        if (cand := state.candidates.get(key)) and cand.hit.page_id in allowed
    ]
    by_citation = {c.hit.interval.citation(): c for c in reversed(ranked)}
    order += [
        cand
        for fact in facts
        if (cand := by_citation.get(fact.rsplit(" ", 1)[-1])) and cand.hit.page_id in allowed
    ]
    order = list({id(c): c for c in order}.values())
    head = len(order)
    terms = frozenset(analyze(state.request))
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
        near = [w for w in windows if w.touches(iv.path, iv.commit, iv.start, iv.end)]
        if any(w.start <= iv.start and iv.end <= w.end for w in near):
            continue  # already inside a chosen window
        # A turn carried in part stays a window of its own (the turns beside it may join
        # each other, not it).
        touching = [w for w in near if not w.trimmed]
        lo = min([iv.start] + [w.start for w in touching])
        hi = max([iv.end] + [w.end for w in touching])
        before = sum(_cost(toolkit, w.path, w.commit, w.start, w.end) for w in touching)
        extra = _cost(toolkit, iv.path, iv.commit, lo, hi) - before
        score = state.effective(cand)
        fits = used + extra <= budget
        long_turn = n < head and not touching and extra > max(budget // LONG_SHARE, LONG_TOKENS)
        if not fits or long_turn:
            # A smaller interval further down may still fit. A page's best interval, or one
            # a key fact cites, that is a single turn too long for what is left, or long (see
            # LONG_SHARE), is carried in part: the sentences that hold the request's words. A
            # long interval that is no turn (a note's paragraph) is carried whole if it fits.
            room = min(budget - used, max(budget // TRIM_SHARE, TRIM_TOKENS))
            trimmed = None
            if n < head and iv.kind == "turn" and room >= MIN_TRIM_TOKENS:
                text = _text(toolkit, iv.path, iv.commit, iv.start, iv.end)
                trimmed = _trimmed(text, terms, room)
            if trimmed is not None:
                window = Window(
                    iv.path, iv.commit, iv.page_id, cand.hit.session_id, iv.start, iv.end,
                    iv.blob, score, set(cand.retrievers), n, trimmed,
                )  # fmt: skip
                windows.append(window)
                used += count_tokens(trimmed[1])
                continue
            if not fits:
                continue
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
        excerpt = render_excerpt(source)
        if w.trimmed:
            source, excerpt = w.trimmed
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
                excerpt,
                w.score,
                retriever,
                interval,
                w.session_id,
                source_text=source,
                partial=w.trimmed is not None,
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
        head = _head(m, last_when)
        last_when = short_time(m.group(3)) or last_when
    flush()
    return "\n".join(out)


def _head(header: re.Match[str], last_when: str = "") -> str:
    """A turn's header line as an excerpt shows it: ``<turn id> <speaker> (<when>)``, the
    time left out when it is ``last_when``."""
    turn_id, speaker, stamp = header.group(1), header.group(2), header.group(3)
    when = short_time(stamp)
    head = f"{turn_id} {speaker}".rstrip()
    return f"{head} ({when})" if when and when != last_when else head


def _trimmed(source: str, terms: frozenset[str], room: int) -> tuple[str, str] | None:
    """Part of one turn (``source``: its header line and its lines of text) within ``room``
    tokens: the sentence holding most of the request's ``terms`` (the first on a tie), and
    the sentences around it, after and before it in turn, while they fit; "…" marks what is
    left out. Returns the turn's lines with what is left out blanked (each line still at its
    place in the file) and the excerpt. A sentence too long on its own is taken by its
    clauses (set apart by semicolons) in the same way, and a clause too long on its own is
    cut (its start shown); None if nothing fits."""
    lines = source.split("\n")
    header = TURN_HEADER.match(lines[0]) if lines else None
    if header is None:
        return None
    body = "\n".join(unescape_line(line) for line in lines[1:])
    # The pieces that key facts are cut from (PIECE_BREAK), as spans of ``body``.
    breaks = [(0, 0), *((m.start(), m.end()) for m in PIECE_BREAK.finditer(body)), (len(body),) * 2]
    spans = [(a, b) for (_, a), (b, _) in pairwise(breaks) if body[a:b].strip()]
    if not spans:
        return None
    head = _head(header) + ": "

    def render(lo: int, hi: int) -> str:
        a, b = spans[lo][0], spans[hi][1]
        text = " ".join(body[a:b].split())
        return head + ("… " if a > 0 else "") + text + (" …" if body[b:].strip() else "")

    def best_span() -> int:
        hits = [len(terms & set(analyze(body[a:b]))) for a, b in spans]
        return max(range(len(spans)), key=lambda i: (hits[i], -i))

    best = best_span()
    if count_tokens(render(best, best)) > room:
        # A sentence too long on its own, a summary's "Actions: …; …; …": its clauses
        # instead, so that the part carried is the clause that speaks of the request and
        # those around it, not the sentence's start cut mid-phrase ("…; data …").
        a, b = spans[best]
        cuts = [(a, a), *((a + m.start(), a + m.end()) for m in CLAUSE_BREAK.finditer(body[a:b]))]
        clauses = [(x, y) for (_, x), (y, _) in pairwise([*cuts, (b, b)]) if body[x:y].strip()]
        if len(clauses) > 1:
            spans[best : best + 1] = clauses
            best = best_span()
    lo = hi = best
    if count_tokens(render(lo, hi)) > room:
        # The sentence alone is too long: its start, cut at a token.
        a, b = spans[best]
        limit = room - count_tokens(render(lo, hi)) + count_tokens(body[a:b])
        while limit > 0:
            cut = truncate_tokens(body[a:b], limit)
            if cut.endswith(" …"):
                spans[best] = (a, a + len(cut) - len(" …"))
                if count_tokens(render(lo, hi)) <= room:
                    break
            limit -= 1
        else:
            return None
    while True:
        # The side that has grown less first, so that the best sentence stays in the middle.
        sides = [(lo, hi + 1), (lo - 1, hi)]
        if hi - best > best - lo:
            sides.reverse()
        grown = [(x, y) for x, y in sides if x >= 0 and y < len(spans)]
        fits = [(x, y) for x, y in grown if count_tokens(render(x, y)) <= room]
        if not fits:
            break
        lo, hi = fits[0]
    a, b = spans[lo][0], spans[hi][1]
    kept = [lines[0]]
    offset = 0  # where each line starts in ``body``
    for line in lines[1:]:
        text = unescape_line(line)
        start, end = offset, offset + len(text)
        offset = end + 1
        if a <= start and end <= b:
            kept.append(line)
        elif start < b and end > a:
            kept.append(text[max(a, start) - start : min(b, end) - start].strip())
        else:
            kept.append("")
    return "\n".join(kept), render(lo, hi)


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
