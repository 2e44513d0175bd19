"""The researcher's running state: every interval found so far, scored by rank fusion across
all the searches of all steps, and the pages those intervals make strongest.

What decides where an answer sits, beyond what matched:

- **context**: a turn that matches the request passes part of its score to the two turns
  after it (the answer to a question follows it, often after a remark in between, and rarely
  repeats its words) and a little to the two before it;
- **speaker**: when the request names someone who speaks in memory, their own turns count
  more ("what did Nate think of ..." is answered by Nate far more often than by the person
  he talked to);
- **echo**: kbmem's own earlier answers, memorized with the chats they were given in,
  repeat the request's words and quote their sources, and the questions put to it there
  repeat the request word for word: they count less than the sources, or asking the same
  thing a few times would fill the briefing with earlier questions and answers."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from kbmem.index.tenant import Hit, analyze
from kbmem.memorize.sessions import ECHO_WEIGHT, is_echo
from kbmem.research.toolkit import RRF_K
from kbmem.research.types import IntegrationState, PlanAction

if TYPE_CHECKING:
    from kbmem.research.reading import Reading

# Shares of a turn's score passed to the turns after it and before it (nearest first): an
# answer often comes a turn or two after the question that names its subject.
CONTEXT_NEXT = (0.5, 0.3)
CONTEXT_PREV = (0.2, 0.2)
SPEAKER_BOOST = 1.5  # weight of a turn spoken by someone the request names
# In a request that asks several things, a word that only a follow-up search found is
# carried by that search's best hit holding it as asked, lifted to stand as high as the pool's
# COVER_RANK-th best interval (counting from 0): in "Who maintains the tide-window scheduler
# and when is the offsite?", the turns that match the first part outnumber the offsite's.
COVER_RANK = 3
_WORD = re.compile(r"[^\W_]+")

Around = Callable[[Hit, int, int], tuple[list[Hit], list[Hit]]]


@lru_cache(maxsize=4096)
def term_set(text: str) -> frozenset[str]:
    """The text's terms as the index spells them, read once for texts that every request
    reads again (excerpts, memos)."""
    return frozenset(analyze(text))


def holds_as_asked(text: str, word: str, asked_with: list[str]) -> bool:
    """Whether ``text`` holds ``word`` as a request asks it: with one of ``asked_with`` (the
    other terms of the part of the request that asks it), where that part has others.
    (Reflection asks this of the same few excerpts for each of the request's words.)"""
    terms = term_set(text)
    return term_set(word) <= terms and (not asked_with or not terms.isdisjoint(asked_with))


@dataclass
class Candidate:
    hit: Hit
    score: float = 0.0
    # Credit from searches that rank intervals but not pages (late interaction): it counts
    # for the interval's standing, not for its page's (see page_scores).
    unpaged: float = 0.0
    retrievers: set[str] = field(default_factory=set)
    first_step: int = 0
    echo: bool = False  # see sessions.is_echo


@dataclass
class ResearchState:
    request: str
    candidates: dict[str, Candidate] = field(default_factory=dict)
    actions_done: list[PlanAction] = field(default_factory=list)
    queries_done: set[tuple[str, str]] = field(default_factory=set)
    integration: IntegrationState = field(default_factory=IntegrationState)
    step: int = 0
    followed: set[str] = field(default_factory=set)  # bridge terms already searched
    # Sessions the request points at (by the dates it names): their intervals count more.
    focus_sessions: set[str] = field(default_factory=set)
    focus_boost: float = 4.0
    # Page-level BM25 votes of every keyword search so far (rank fusion across searches).
    page_votes: dict[str, float] = field(default_factory=dict)
    # The intervals around a hit on its page (the toolkit's ``around``); None: no context.
    around: Around | None = None
    # How many pages the briefing draws its evidence from (see briefing_pages).
    max_pages: int = 8
    # The request's words that follow-up searches looked for, each with the key of the
    # interval that stands for it (see cover).
    covering: dict[str, str] = field(default_factory=dict)
    # The request's words as memory holds them (see kbmem.research.reading), for judging
    # what the evidence covers; None: as typed.
    reading: Reading | None = None
    _speaker_weights: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._request_words = frozenset(_WORD.findall(self.request.lower()))

    def speaker_weight(self, speaker: str) -> float:
        """SPEAKER_BOOST for a speaker the request names (by full or first name), else 1."""
        weight = self._speaker_weights.get(speaker)
        if weight is None:
            words = _WORD.findall(speaker.lower())
            named = bool(words) and (
                words[0] in self._request_words or set(words) <= self._request_words
            )
            weight = self._speaker_weights[speaker] = SPEAKER_BOOST if named else 1.0
        return weight

    def vote_pages(self, page_ids: list[str], weight: float = 1.0) -> None:
        for rank, page_id in enumerate(page_ids, start=1):
            self.page_votes[page_id] = self.page_votes.get(page_id, 0.0) + weight / (RRF_K + rank)

    def effective(self, cand: Candidate, paged: bool = False) -> float:
        """The candidate's standing: its credit (only what counts for pages, if ``paged``),
        weighed by who said it, whether it is an echo, and the sessions the request names."""
        score = cand.score if paged else cand.score + cand.unpaged
        if cand.echo:
            score *= ECHO_WEIGHT
        elif cand.hit.speaker:
            score *= self.speaker_weight(cand.hit.speaker)
        if cand.hit.session_id and cand.hit.session_id in self.focus_sessions:
            score *= self.focus_boost
        return score

    def add(
        self, action: PlanAction, hits: list[Hit], weight: float = 1.0, paged: bool = True
    ) -> int:
        """Fold one action's ranked hits into the pool by weighted reciprocal rank, with
        context credit for the turns around each; returns how many intervals were new.
        ``paged``: the credit counts for the hits' pages too (see page_scores)."""
        new = 0
        for rank, hit in enumerate(hits, start=1):
            new += self._credit_in_context(hit, weight / (RRF_K + rank), hit.retriever, paged)
        return new

    def _credit_in_context(
        self, hit: Hit, credit: float, retriever: str, paged: bool = True
    ) -> int:
        """``_credit``, and shares of it to the turns around a turn (see CONTEXT_NEXT)."""
        new = self._credit(hit, credit, retriever, paged)
        if self.around is not None and hit.interval.kind == "turn":
            before, after = self.around(hit, len(CONTEXT_PREV), len(CONTEXT_NEXT))
            for others, shares in ((after, CONTEXT_NEXT), (before, CONTEXT_PREV)):
                # At a page's ends there are fewer turns than shares.
                for other, share in zip(others, shares, strict=False):
                    self._credit(other, share * credit, "context", paged)
        return new

    def follow(
        self, action: PlanAction, hits: list[Hit], weight: float, top: int, share: float
    ) -> int:
        """Fold in the hits of a search that follows a reference made by the interval
        ``action.follows``: as any search's (``add``), and the ``top`` best (the source
        aside) also get ``share`` of the source's score. A chain of evidence is as strong as
        the link that started it, and weaker: what the search adds never lifts a hit above
        ``share`` of its source (following the name in "maintained by Priya" finds Priya's
        other turns, which say nothing about what was asked), and the source gains nothing
        from holding the name it gave."""
        source = self.candidates.get(action.follows or "")
        before = {
            h.interval.key: c.score for h in hits if (c := self.candidates.get(h.interval.key))
        }
        new = self.add(action, hits, weight)
        if source is None:
            return new
        source_key = source.hit.interval.key
        limit = before.get(source_key, source.score)
        for hit in [h for h in hits if h.interval.key != source_key][:top]:
            self._credit(hit, share * limit, hit.retriever)
        for hit in hits:
            cand = self.candidates[hit.interval.key]
            cand.score = min(cand.score, max(before.get(hit.interval.key, 0.0), share * limit))
        source.score = limit
        return new

    def cover(self, action: PlanAction, hits: list[Hit], weight: float = 1.0) -> int:
        """Fold in the hits of a search for ``action.covers``, a word of the request that the
        evidence lacked (as ``add``), and lift one of them to the standing of the pool's
        COVER_RANK-th best interval: the best supported hit that holds the word in the sense
        the request asks it (with one of ``action.covers_with``: "maintained by the office"
        says nothing of who maintains the scheduler) and is no echo (kbmem's earlier answers
        and the questions put to it repeat the request's words). The turns around it share
        the lift as they share any credit: the turn that says "you had offsite news" is
        followed by the one that gives it. Without the lift, a search for one word adds a
        fraction of what the request's own searches gave the intervals matching its other
        words, and the word stays uncovered."""
        new = self.add(action, hits, weight)
        if not analyze(action.covers):
            return new
        holding = [
            (self.effective(cand), -rank, hit)
            for rank, hit in enumerate(hits)
            if not (cand := self.candidates[hit.interval.key]).echo
            and holds_as_asked(hit.excerpt, action.covers, action.covers_with)
        ]
        if not holding:
            return new
        # Of the hits that hold the word, the one the request's other searches (and the turns
        # around it) support most.
        standing, _rank, hit = max(holding, key=lambda item: item[:2])
        ranked = self.ranked()
        bar = self.effective(ranked[min(COVER_RANK, len(ranked) - 1)])
        if 0 < standing < bar:
            cand = self.candidates[hit.interval.key]
            lift = (cand.score + cand.unpaged) * (bar / standing - 1)
            self._credit_in_context(hit, lift, hit.retriever)
        self.covering[action.covers] = hit.interval.key
        return new

    def _credit(self, hit: Hit, credit: float, retriever: str, paged: bool = True) -> int:
        """Add ``credit`` to the hit's interval (to what counts for its page too, if
        ``paged``); 1 if the interval is new to the pool."""
        key = hit.interval.key
        cand = self.candidates.get(key)
        fresh = cand is None
        if cand is None:
            echo = is_echo(hit.session_id, hit.speaker, hit.excerpt)
            cand = self.candidates[key] = Candidate(hit=hit, first_step=self.step, echo=echo)
        if paged:
            cand.score += credit
        else:
            cand.unpaged += credit
        cand.retrievers.add(retriever)
        return int(fresh and retriever != "context")

    def page_scores(
        self, depth: int = 3, decay: float = 0.5, pool_weight: float = 0.5
    ) -> list[tuple[str, float]]:
        """Pages ranked by rank fusion of two views: whole-page BM25 votes, and the pages
        of the best intervals found (decaying credit for a page's further intervals; credit
        that counts for intervals only, see Candidate.unpaged, left out)."""
        per_page: dict[str, list[float]] = {}
        best: dict[str, tuple[float, bool]] = {}  # each page's best score, and if an echo's
        for cand in self.candidates.values():
            if cand.score <= 0:
                continue  # found only by searches that rank intervals
            score = self.effective(cand, paged=True)
            per_page.setdefault(cand.hit.page_id, []).append(score)
            if score > best.get(cand.hit.page_id, (-1.0, False))[0]:
                best[cand.hit.page_id] = (score, cand.echo)
        pooled = []
        for page_id, values in per_page.items():
            values.sort(reverse=True)
            pooled.append((page_id, sum(v * decay**i for i, v in enumerate(values[:depth]))))
        pooled.sort(key=lambda item: (-item[1], item[0]))
        # A page whose best interval is an echo (a chat of earlier questions and answers that
        # quote their sources) ranks as a whole no higher than an echo does.
        scores = {
            page_id: votes * (ECHO_WEIGHT if best.get(page_id, (0.0, False))[1] else 1.0)
            for page_id, votes in self.page_votes.items()
        }
        for rank, (page_id, _v) in enumerate(pooled, start=1):
            boost = self.focus_boost if page_id.rsplit("/", 1)[0] in self.focus_sessions else 1.0
            scores[page_id] = scores.get(page_id, 0.0) + boost * pool_weight / (RRF_K + rank)
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))

    def briefing_pages(self) -> list[str]:
        """The pages the briefing draws its evidence from: the ``max_pages`` best."""
        return [page_id for page_id, _s in self.page_scores()[: self.max_pages]]

    def citable(self, candidates: list[Candidate]) -> list[Candidate]:
        """Those of ``candidates`` on the pages the briefing draws from: a key fact cut from
        another page would cite a turn that the evidence does not carry, which neither a
        reader nor the agent answering from the evidence could see."""
        pages = set(self.briefing_pages())
        return [c for c in candidates if c.hit.page_id in pages]

    def ranked(self) -> list[Candidate]:
        """Best first; of equal scores, what an earlier step found (a source before the hits
        that following it found)."""
        return sorted(
            self.candidates.values(),
            key=lambda c: (-self.effective(c), c.first_step, c.hit.interval.key),
        )
