"""The researcher's running state: every interval found so far, scored by rank fusion across
all the searches of all steps, and the pages those intervals make strongest."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..index import Hit
from ..toolkit import RRF_K
from .types import IntegrationState, PlanAction


@dataclass
class Candidate:
    hit: Hit
    score: float = 0.0
    retrievers: set[str] = field(default_factory=set)
    first_step: int = 0


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

    def vote_pages(self, page_ids: list[str], weight: float = 1.0) -> None:
        for rank, page_id in enumerate(page_ids, start=1):
            self.page_votes[page_id] = self.page_votes.get(page_id, 0.0) + weight / (RRF_K + rank)

    def effective(self, cand: Candidate) -> float:
        if cand.hit.session_id and cand.hit.session_id in self.focus_sessions:
            return cand.score * self.focus_boost
        return cand.score

    def add(
        self,
        action: PlanAction,
        hits: list[Hit],
        weight: float = 1.0,
        top: int = 0,
        top_weight: float = 1.0,
    ) -> int:
        """Fold one action's ranked hits into the pool (the first ``top`` of them with
        ``top_weight``); returns how many were new."""
        new = 0
        for rank, hit in enumerate(hits, start=1):
            w = top_weight if rank <= top else weight
            key = hit.interval.key
            cand = self.candidates.get(key)
            if cand is None:
                cand = self.candidates[key] = Candidate(hit=hit, first_step=self.step)
                new += 1
            cand.score += w / (RRF_K + rank)
            cand.retrievers.add(hit.retriever)
        return new

    def page_scores(
        self, depth: int = 3, decay: float = 0.5, pool_weight: float = 0.5
    ) -> list[tuple[str, float]]:
        """Pages ranked by rank fusion of two views: whole-page BM25 votes, and the pages
        of the best intervals found (decaying credit for a page's further intervals)."""
        per_page: dict[str, list[float]] = {}
        for cand in self.candidates.values():
            per_page.setdefault(cand.hit.page_id, []).append(self.effective(cand))
        pooled = []
        for page_id, values in per_page.items():
            values.sort(reverse=True)
            pooled.append((page_id, sum(v * decay**i for i, v in enumerate(values[:depth]))))
        pooled.sort(key=lambda item: (-item[1], item[0]))
        scores = dict(self.page_votes)
        for rank, (page_id, _v) in enumerate(pooled, start=1):
            boost = self.focus_boost if page_id.rsplit("/", 1)[0] in self.focus_sessions else 1.0
            scores[page_id] = scores.get(page_id, 0.0) + boost * pool_weight / (RRF_K + rank)
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))

    def ranked(self) -> list[Candidate]:
        return sorted(
            self.candidates.values(), key=lambda c: (-self.effective(c), c.hit.interval.key)
        )
