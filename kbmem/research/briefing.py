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
from kbmem.textutil import CLAUSE_BREAK, count_tokens, sentence_spans, truncate_tokens

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
    order, head = _evidence_order(state, ranked, facts)
    packing = _Packing(toolkit, state, budget, head, frozenset(analyze(state.request)))
    for n, cand in enumerate(order):
        packing.take(n, cand)
    windows = sorted(packing.windows, key=lambda w: (-w.score, w.order))
    return [_evidence_item(toolkit, w) for w in windows]


def _evidence_order(
    state: ResearchState, ranked: list[Candidate], facts: Sequence[str]
) -> tuple[list[Candidate], int]:
    """The briefing pages' intervals in the order the budget goes to them, and how many of
    them lead: each page's best interval, then those that stand for words of the request
    which only a follow-up search found (see ResearchState.cover), then the turns the key
    facts cite, in the facts' order; then the rest."""
    pages = state.briefing_pages()
    allowed = set(pages)
    firsts: dict[str, Candidate] = {}
    for cand in ranked:
        if cand.hit.page_id in allowed and cand.hit.page_id not in firsts:
            firsts[cand.hit.page_id] = cand
    order = [firsts[p] for p in pages if p in firsts]
    order += [
        covering
        for key in state.covering.values()
        if (covering := state.candidates.get(key)) and covering.hit.page_id in allowed
    ]
    by_citation = {c.hit.interval.citation(): c for c in reversed(ranked)}
    order += [
        cited
        for fact in facts
        if (cited := by_citation.get(fact.rsplit(" ", 1)[-1])) and cited.hit.page_id in allowed
    ]
    order = list({id(c): c for c in order}.values())
    head = len(order)
    best = state.effective(ranked[0])
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
    # eighth.
    page_rank = {p: n for n, p in enumerate(pages)}
    rest.sort(key=lambda c: -state.effective(c) / (1 + PAGE_RANK_DECAY * page_rank[c.hit.page_id]))
    return order + rest, head


@dataclass
class _Packing:
    """The windows chosen so far within ``budget`` tokens, ``used`` of them spent. The first
    ``head`` intervals taken lead (see _evidence_order): they may be carried in part."""

    toolkit: Toolkit
    state: ResearchState
    budget: int
    head: int
    terms: frozenset[str]  # the request's, which a turn carried in part keeps
    windows: list[Window] = field(default_factory=list)
    used: int = 0

    def take(self, n: int, cand: Candidate) -> None:
        """Take the ``n``-th interval of the order, if it fits: into a window it touches, or
        a window of its own."""
        iv = cand.hit.interval
        if iv.kind != "turn":
            iv = self.toolkit.expand(iv, "paragraph", 0).interval
        near = [w for w in self.windows if w.touches(iv.path, iv.commit, iv.start, iv.end)]
        if any(w.start <= iv.start and iv.end <= w.end for w in near):
            return  # already inside a chosen window
        # A turn carried in part stays a window of its own (the turns beside it may join
        # each other, not it).
        touching = [w for w in near if not w.trimmed]
        lo = min([iv.start] + [w.start for w in touching])
        hi = max([iv.end] + [w.end for w in touching])
        before = sum(_cost(self.toolkit, w.path, w.commit, w.start, w.end) for w in touching)
        extra = _cost(self.toolkit, iv.path, iv.commit, lo, hi) - before
        score = self.state.effective(cand)
        fits = self.used + extra <= self.budget
        long_turn = (
            n < self.head and not touching and extra > max(self.budget // LONG_SHARE, LONG_TOKENS)
        )
        # A smaller interval further down may still fit. A page's best interval, or one a key
        # fact cites, that is a single turn too long for what is left, or long (see
        # LONG_SHARE), is carried in part: the sentences that hold the request's words. A long
        # interval that is no turn (a note's paragraph) is carried whole if it fits.
        if (not fits or long_turn) and (self._carry_in_part(n, cand, iv, score) or not fits):
            return
        if touching:
            _merge(touching, self.windows, lo, hi, score, cand.retrievers)
        else:
            window = Window(
                iv.path, iv.commit, iv.page_id, cand.hit.session_id, lo, hi, iv.blob,
                score, set(cand.retrievers), n,
            )  # fmt: skip
            self.windows.append(window)
        self.used += extra

    def _carry_in_part(self, n: int, cand: Candidate, iv: Interval, score: float) -> bool:
        """Take a leading turn that does not fit (or is long) in part (see _trimmed), if
        enough of the budget is left; whether it was taken."""
        room = min(self.budget - self.used, max(self.budget // TRIM_SHARE, TRIM_TOKENS))
        if not (n < self.head and iv.kind == "turn" and room >= MIN_TRIM_TOKENS):
            return False
        text = _text(self.toolkit, iv.path, iv.commit, iv.start, iv.end)
        trimmed = _trimmed(text, self.terms, room)
        if trimmed is None:
            return False
        window = Window(
            iv.path, iv.commit, iv.page_id, cand.hit.session_id, iv.start, iv.end,
            iv.blob, score, set(cand.retrievers), n, trimmed,
        )  # fmt: skip
        self.windows.append(window)
        self.used += count_tokens(trimmed[1])
        return True


def _merge(
    touching: list[Window],
    windows: list[Window],
    lo: int,
    hi: int,
    score: float,
    retrievers: set[str],
) -> None:
    """Join the ``touching`` windows into the first of them, which then spans ``lo..hi``
    and holds the new interval (``score``, found by ``retrievers``) too."""
    keep = touching[0]
    for other in touching[1:]:
        keep.retrievers |= other.retrievers
        keep.score = max(keep.score, other.score)
        keep.order = min(keep.order, other.order)
        windows.remove(other)
    keep.start, keep.end = lo, hi
    keep.score = max(keep.score, score)
    keep.retrievers |= retrievers


def _evidence_item(toolkit: Toolkit, w: Window) -> EvidenceItem:
    """A chosen window as the briefing's evidence item, its interval citing its exact lines."""
    source = _text(toolkit, w.path, w.commit, w.start, w.end)
    turn_ids = tuple(m.group(1) for line in source.split("\n") if (m := TURN_HEADER.match(line)))
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
    return EvidenceItem(
        w.page_id,
        excerpt,
        w.score,
        retriever,
        interval,
        w.session_id,
        source_text=source,
        partial=w.trimmed is not None,
    )


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
    spans = sentence_spans(body, cut="pieces")  # the pieces that key facts are cut from
    if not spans:
        return None
    part = _TurnPart(body, spans, _head(header) + ": ", terms)
    best = part.best_span()
    if part.tokens(best, best) > room:
        # A sentence too long on its own, a summary's "Actions: …; …; …": its clauses
        # instead, so that the part carried is the clause that speaks of the request and
        # those around it, not the sentence's start cut mid-phrase ("…; data …").
        best = part.by_clauses(best)
    if part.tokens(best, best) > room and not part.cut_start(best, room):
        return None
    lo, hi = part.grown(best, room)
    return _blanked(lines, spans[lo][0], spans[hi][1]), part.render(lo, hi)


@dataclass
class _TurnPart:
    """A turn's text (``body``) as the ``spans`` of its sentences (or clauses), and the
    part of it an excerpt carries: spans ``lo..hi`` rendered after ``head``."""

    body: str
    spans: list[tuple[int, int]]
    head: str
    terms: frozenset[str]

    def render(self, lo: int, hi: int) -> str:
        a, b = self.spans[lo][0], self.spans[hi][1]
        text = " ".join(self.body[a:b].split())
        return self.head + ("… " if a > 0 else "") + text + (" …" if self.body[b:].strip() else "")

    def tokens(self, lo: int, hi: int) -> int:
        return count_tokens(self.render(lo, hi))

    def best_span(self) -> int:
        """The span holding most of the request's terms, the first on a tie."""
        hits = [len(self.terms & set(analyze(self.body[a:b]))) for a, b in self.spans]
        return max(range(len(self.spans)), key=lambda i: (hits[i], -i))

    def by_clauses(self, best: int) -> int:
        """Span ``best`` replaced by its clauses, if it has several; the best span then."""
        a, b = self.spans[best]
        body = self.body
        cuts = [(a, a), *((a + m.start(), a + m.end()) for m in CLAUSE_BREAK.finditer(body[a:b]))]
        clauses = [(x, y) for (_, x), (y, _) in pairwise([*cuts, (b, b)]) if body[x:y].strip()]
        if len(clauses) < 2:
            return best
        self.spans[best : best + 1] = clauses
        return self.best_span()

    def cut_start(self, best: int, room: int) -> bool:
        """Span ``best``, too long alone, cut to its start (at a token) so that it fits in
        ``room``; whether it could be."""
        a, b = self.spans[best]
        limit = room - self.tokens(best, best) + count_tokens(self.body[a:b])
        while limit > 0:
            cut = truncate_tokens(self.body[a:b], limit)
            if cut.endswith(" …"):
                self.spans[best] = (a, a + len(cut) - len(" …"))
                if self.tokens(best, best) <= room:
                    return True
            limit -= 1
        return False

    def grown(self, best: int, room: int) -> tuple[int, int]:
        """The spans around ``best`` that fit in ``room``, grown one at a time: the side
        that has grown less first, so that the best span stays in the middle."""
        lo = hi = best
        while True:
            sides = [(lo, hi + 1), (lo - 1, hi)]
            if hi - best > best - lo:
                sides.reverse()
            grown = [(x, y) for x, y in sides if x >= 0 and y < len(self.spans)]
            fits = [(x, y) for x, y in grown if self.tokens(x, y) <= room]
            if not fits:
                return lo, hi
            lo, hi = fits[0]


def _blanked(lines: list[str], a: int, b: int) -> str:
    """A turn's ``lines`` (a header, then its text) with all of the text but offsets
    ``a..b`` of it blanked, each line kept at its place in the file."""
    kept = [lines[0]]
    offset = 0  # where each line starts in the text
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
    return "\n".join(kept)


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
