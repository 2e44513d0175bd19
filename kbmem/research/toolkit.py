"""The retrieval toolkit the researcher, the chat agent, the CLI and the API call: ``bm25``,
``dense``, ``hybrid``, ``page``, ``neighbors`` and ``expand``, all scoped to one tenant."""

from __future__ import annotations

import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from kbmem.dates import date_windows, sessions_in
from kbmem.errors import NotFound, ValidationError
from kbmem.ids import page_relpath
from kbmem.index.intervals import EXPAND_MODES, Interval, expand_lines
from kbmem.index.tenant import MAX_K, Hit, TenantIndex, check_query
from kbmem.memorize.memorizer import read_memory
from kbmem.memorize.sessions import CHAT_AGENT, ECHO_WEIGHT, is_echo
from kbmem.research.perspective import Voiced, voiced
from kbmem.store.pages import TURN_HEADER, parse_page
from kbmem.store.pagestore import PageRecord, PageStore
from kbmem.store.repository import KnowledgeBase

TOOLS = ("bm25", "dense", "hybrid")
RRF_K = 60  # reciprocal rank fusion's usual constant: the first ranks lead, not by much
# Rank-fusion weights: BM25 is the stronger retriever on conversational memory; the small dense
# model mostly adds paraphrase matches, so it votes with less weight.
FUSION_WEIGHTS = {"bm25": 1.0, "dense": 0.6}
MAX_PAD = 50  # units an expand may add on each side; more is reading the page itself
# Page ranking: the page as a whole document and its nearest interval (searched in the voice of
# the person the query is about, see perspective) count most; its best BM25 intervals add a
# little; a session held on a date the query names counts as much as a first place in another
# list.
PAGE_FUSION_WEIGHTS = {"pages": 1.0, "bm25": 0.5, "dense": 1.0, "dated": 1.0}
_SHA = re.compile(r"^[0-9a-f]{40}$")
# What a long-lived toolkit (a server's, per tenant) keeps of the pages it has read: bounded by
# size as well as by count, since one page can hold a turn of many megabytes (a session may be
# up to memorizer.max_session_bytes) and 256 such pages would hold gigabytes.
TEXT_CACHE_FILES = 256
TEXT_CACHE_BYTES = 64 * 1024 * 1024  # as sys.getsizeof counts a str
PAGE_TABLE_CACHE_PAGES = 1024
PAGE_TABLE_CACHE_INTERVALS = 50_000  # each interval's hit carries up to EXCERPT_CHARS


@dataclass
class ExpandedInterval:
    interval: Interval
    text: str  # the file's lines start..end, as they are at interval.commit


def fuse(
    ranked: dict[str, list[Hit]], k: int, weights: dict[str, float] | None = None
) -> list[Hit]:
    """Weighted reciprocal-rank fusion of several hit lists (ranks, not raw scores, whose
    scales differ); one hit per interval, keeping where each list ranked it."""
    weights = weights or FUSION_WEIGHTS
    fused: dict[str, Hit] = {}
    scores: dict[str, float] = {}
    for name, hits in ranked.items():
        for rank, hit in enumerate(hits, start=1):
            key = hit.interval.key
            scores[key] = scores.get(key, 0.0) + weights.get(name, 1.0) / (RRF_K + rank)
            if key not in fused:
                fused[key] = replace(hit, retriever="hybrid", ranks={})
            fused[key].ranks[name] = rank
    order = sorted(fused, key=lambda key: (-scores[key], key))[:k]
    return [replace(fused[key], score=scores[key]) for key in order]


def fuse_ranks(lists: dict[str, list[str]], weights: dict[str, float]) -> list[str]:
    """Weighted reciprocal-rank fusion of ranked id lists."""
    scores: dict[str, float] = {}
    for name, ids in lists.items():
        for rank, item in enumerate(ids, start=1):
            scores[item] = scores.get(item, 0.0) + weights.get(name, 1.0) / (RRF_K + rank)
    return sorted(scores, key=lambda item: (-scores[item], item))


def rank_pages(hits: list[Hit], decay: float = 0.5, depth: int = 3) -> list[tuple[str, float]]:
    """Pages scored by their best intervals: the best hit's score plus decaying credit for
    the next few, so a page that matches in several places beats a lone lucky turn."""
    per_page: dict[str, list[float]] = {}
    for hit in hits:
        per_page.setdefault(hit.page_id, []).append(hit.score)
    scored = []
    for page_id, values in per_page.items():
        values.sort(reverse=True)
        scored.append((page_id, sum(v * decay**i for i, v in enumerate(values[:depth]))))
    return sorted(scored, key=lambda item: (-item[1], item[0]))


ECHO_SLACK = 20  # extra hits a search fetches, so that echoes moved down leave k others


def check_tool(tool: str) -> None:
    if tool not in TOOLS:
        raise ValidationError(f"unknown tool {tool!r} (known: {', '.join(TOOLS)})", "tool")


K = TypeVar("K")
V = TypeVar("V")


class _Kept(Generic[K, V]):
    """Least recently used values, bounded by count and by a total weight (``weigh``); a
    value over the whole weight alone is not kept. Thread-safe."""

    def __init__(self, items: int, weight: int, weigh: Callable[[V], int]):
        self.items, self.weight, self.weigh = items, weight, weigh
        self._values: OrderedDict[K, V] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._values.get(key)
            if value is not None:
                self._values.move_to_end(key)
            return value

    def order(self) -> list[K]:
        """The keys kept, least recently used first."""
        with self._lock:
            return list(self._values)

    def values(self) -> list[V]:
        with self._lock:
            return list(self._values.values())

    def put(self, key: K, value: V) -> None:
        size = self.weigh(value)
        if size > self.weight:
            return
        with self._lock:
            old = self._values.pop(key, None)
            self._total += size - (self.weigh(old) if old is not None else 0)
            self._values[key] = value
            while len(self._values) > self.items or self._total > self.weight:
                self._total -= self.weigh(self._values.popitem(last=False)[1])


class Toolkit:
    """Tenant-scoped retrieval tools over the tenant's index (synced to HEAD on use)."""

    def __init__(self, kb: KnowledgeBase, tenant: str):
        self.kb = kb
        self.tenant = tenant
        self.index = TenantIndex.shared(kb, tenant)
        self.store = PageStore(kb, tenant)
        self._texts: _Kept[tuple[str, str], str] = _Kept(
            TEXT_CACHE_FILES, TEXT_CACHE_BYTES, sys.getsizeof
        )
        self._page_intervals: _Kept[tuple[str, str], tuple[list[Hit], dict[int, int]]] = _Kept(
            PAGE_TABLE_CACHE_PAGES, PAGE_TABLE_CACHE_INTERVALS, lambda table: len(table[0])
        )

    # -- search -----------------------------------------------------------------------------

    def bm25(self, query: str, k: int = 10, filters: dict[str, Any] | None = None) -> list[Hit]:
        return self.index.bm25(query, k, filters)

    def dense(self, query: str, k: int = 10, filters: dict[str, Any] | None = None) -> list[Hit]:
        return self.index.dense(query, k, filters)

    def late(self, query: str, k: int = 10, filters: dict[str, Any] | None = None) -> list[Hit]:
        """Intervals ranked by late interaction: each of the query's words matched to its
        nearest word in the interval (kbmem.index.late)."""
        return self.index.late(query, k, filters)

    def hybrid(self, query: str, k: int = 10, filters: dict[str, Any] | None = None) -> list[Hit]:
        check_query(query, k)
        depth = min(max(2 * k, 20), 1000)
        return fuse(self.index.bm25_and_dense(query, depth, filters), k)

    def bm25_pages(
        self, query: str, k: int = 10, filters: dict[str, Any] | None = None
    ) -> list[tuple[str, float]]:
        """Pages ranked by BM25 over each page as one document."""
        return self.index.bm25_pages(query, k, filters)

    def voiced(self, query: str) -> Voiced | None:
        """The query as the person it is about would have said it (see perspective)."""
        return voiced(query, self.index.speakers(), ignore=(CHAT_AGENT,))

    def dense_pages(
        self, query: str, depth: int = 100, filters: dict[str, Any] | None = None
    ) -> list[str]:
        """Pages ranked by their nearest interval to the query. A query about a person who
        speaks in memory is searched in that person's voice among their own turns."""
        view = self.voiced(query)
        wanted = (filters or {}).get("speaker")
        if view is not None and wanted in (None, view.speaker):
            hits = self.dense(view.text, depth, {**(filters or {}), "speaker": view.speaker})
        else:
            hits = self.dense(query, depth, filters)
        return [p for p, _s in rank_pages(hits, depth=1)]

    def page_lists(
        self,
        query: str,
        tool: str = "hybrid",
        depth: int = 100,
        bm25_hits: list[Hit] | None = None,
    ) -> dict[str, list[str]]:
        """The ranked page lists that ``pages`` fuses for ``tool``: whole pages by BM25
        (``pages``), pages by their best BM25 intervals (``bm25``), pages by their nearest
        interval (``dense``); and for a query that names dates, the pages of the sessions held
        then (``dated``, unranked: ``pages`` ranks them as the other lists do). BM25 interval
        hits already retrieved may be passed in."""
        check_tool(tool)
        check_query(query, depth)
        lists: dict[str, list[str]] = {}
        if tool in ("bm25", "hybrid"):
            bm25_hits = self.bm25(query, depth) if bm25_hits is None else bm25_hits
            lists["pages"] = [p for p, _s in self.bm25_pages(query, depth)]
            lists["bm25"] = [p for p, _s in rank_pages(bm25_hits)]
        if tool in ("dense", "hybrid"):
            lists["dense"] = self.dense_pages(query, depth)
        held = self.sessions_held(query)
        if held:
            lists["dated"] = [p for sid in sorted(held) for p in self.session_pages(sid)]
        return lists

    def sessions_held(self, query: str) -> set[str]:
        """Ids of the sessions held on the dates the query names ("on 7 July, 2023", "in
        October 2023"), read from the dates of the tenant's memos."""
        windows = date_windows(query)
        if not windows:
            return set()
        return set(sessions_in(windows, read_memory(self.kb, self.tenant)))

    def pages(
        self,
        query: str,
        tool: str = "hybrid",
        k: int = 8,
        depth: int = 100,
        lists: dict[str, list[str]] | None = None,
    ) -> list[str]:
        """Page ids ranked for ``query`` by weighted rank fusion of ``page_lists`` (whole-page
        BM25 and best BM25 intervals for ``bm25``, nearest intervals for ``dense``, all three
        for ``hybrid``; with every tool, the sessions held on dates the query names). Lists
        already computed for the query may be passed in."""
        check_tool(tool)
        check_query(query, k)
        if lists is None:
            lists = self.page_lists(query, tool, max(k, depth))
        wanted = {"bm25": ("pages", "bm25", "dated"), "dense": ("dense", "dated")}.get(
            tool, tuple(lists)
        )
        chosen = {name: ids for name, ids in lists.items() if name in wanted and name != "dated"}
        ranked = fuse_ranks(chosen, PAGE_FUSION_WEIGHTS)
        if lists.get("dated") and "dated" in wanted:
            # The dated pages in the order the other lists rank them, unranked ones last.
            held = dict.fromkeys(lists["dated"])
            dated = [p for p in ranked if p in held]
            ranked_set = set(dated)
            chosen["dated"] = dated + [p for p in held if p not in ranked_set]
            ranked = fuse_ranks(chosen, PAGE_FUSION_WEIGHTS)
        return ranked[:k]

    def search(
        self, query: str, tool: str = "hybrid", k: int = 10, filters: dict[str, Any] | None = None
    ) -> list[Hit]:
        """The ``k`` best hits of ``tool``, echoes (kbmem's earlier answers and the questions
        put to it, see sessions.is_echo) scored ECHO_WEIGHT of their match: asked five times,
        a question would otherwise find its five earlier askings before any source."""
        check_tool(tool)
        check_query(query, k)
        hits: list[Hit] = getattr(self, tool)(query, k, filters)
        if not any(is_echo(h.session_id, h.speaker, h.excerpt) for h in hits):
            return hits  # (the common case costs no deeper search)
        hits = getattr(self, tool)(query, min(MAX_K, k + ECHO_SLACK), filters)
        weighed = [
            replace(h, score=h.score * ECHO_WEIGHT)
            if is_echo(h.session_id, h.speaker, h.excerpt)
            else h
            for h in hits
        ]
        weighed.sort(key=lambda h: -h.score)  # stable: equal scores keep the tool's order
        return weighed[:k]

    # -- pages ------------------------------------------------------------------------------

    def page(self, ids: list[str] | str, rev: str = "HEAD") -> list[PageRecord]:
        """The pages with these ids; an id this tenant does not have is refused."""
        if isinstance(ids, str):
            ids = [ids]
        return [self.store.read(page_id, rev) for page_id in ids]

    def neighbors(self, page_id: str, n: int = 1) -> list[str]:
        """Ids of the pages up to ``n`` before and after ``page_id`` in its session."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0 or n > 100:
            raise ValidationError("must be a whole number from 0 to 100", "n")
        page_relpath(page_id)
        session, _, seq = page_id.rpartition("/")
        if not session or not seq.isdigit() or page_id.endswith(".md"):
            return []
        existing = self.store.files()
        if page_id not in existing:
            raise NotFound(f"no page {page_id!r} in tenant {self.tenant!r}")
        number = int(seq)
        out = []
        for other in range(number - n, number + n + 1):
            candidate = f"{session}/{other}"
            if other != number and candidate in existing:
                out.append(candidate)
        return out

    def session_pages(self, session_id: str) -> list[str]:
        """Ids of a session's pages, in order (empty when the tenant has no such session)."""
        prefix = f"{session_id}/"
        found = [p for p in self.store.files() if p.startswith(prefix)]
        return sorted(found, key=lambda p: int(p.rsplit("/", 1)[1]))

    def around(self, hit: Hit, before: int = 1, after: int = 1) -> tuple[list[Hit], list[Hit]]:
        """Up to ``before`` intervals before ``hit`` and ``after`` after it on its page, each
        side nearest first (one look-up of the page's table for both sides)."""
        intervals, position = self._page_table(hit.page_id)
        n = position.get(hit.interval.start)
        if n is None:
            return [], []
        return intervals[max(0, n - before) : n][::-1], intervals[n + 1 : n + 1 + after]

    def _page_table(self, page_id: str) -> tuple[list[Hit], dict[int, int]]:
        gen = self.index.serving()
        key = (gen.name, page_id)
        found = self._page_intervals.get(key)
        if found is not None:
            return found
        intervals = self.index.intervals_of(page_id)
        found = (intervals, {h.interval.start: n for n, h in enumerate(intervals)})
        self._page_intervals.put(key, found)
        return found

    def term_stats(self, terms: list[str]) -> dict[str, int]:
        """How many intervals hold each (analyzed) term, plus ``__total__`` intervals."""
        gen = self.index.ensure_synced()
        stats = {t: gen.doc_frequency(t) for t in terms}
        stats["__total__"] = gen.count
        return stats

    def spellings(self, terms: list[str]) -> dict[str, str]:
        """Each of ``terms`` (analyzed) that no interval holds, mapped to the near term that
        the keyword search reads it as (see kbmem.index.tenant.Generation.spelled); terms memory
        holds, and those it holds nothing near, are left out. (Asked right after term_stats,
        which synced: read from the generation serving now.)"""
        gen = self.index.serving()
        found = {t: gen.spelled(t) for t in terms}
        return {t: near for t, near in found.items() if near != t}

    # -- intervals --------------------------------------------------------------------------

    def file_text(self, path: str, commit: str) -> str:
        """The file as committed in ``commit``; cached by commit id (a symbolic revision such
        as ``HEAD`` is resolved first, so that the cache never serves a moved ref's old text)."""
        if not _SHA.match(commit):
            commit = self.kb.resolve(commit)
        key = (path, commit)
        text = self._texts.get(key)
        if text is not None:
            return text
        text = self.kb.read_bytes(path, commit).decode("utf-8", "replace")
        self._texts.put(key, text)
        return text

    def _own(self, interval: Interval) -> None:
        if not interval.path.startswith(self.store.prefix):
            raise NotFound(f"interval {interval.path} is not in tenant {self.tenant!r}")
        if self.store.path_of(interval.page_id) != interval.path:
            raise ValidationError(
                f"page {interval.page_id!r} does not live at {interval.path}", "interval"
            )

    def resolve(self, interval: Interval) -> ExpandedInterval:
        """The interval's text as it was at its commit."""
        return self.expand(interval, "line", 0)

    def expand(
        self, interval: Interval | dict[str, Any], mode: str = "turn", pad: int = 0
    ) -> ExpandedInterval:
        """Grow an interval to a natural boundary (``line``, ``turn``, ``paragraph``,
        ``section``) plus ``pad`` more units on each side, read at the interval's commit."""
        if isinstance(interval, dict):
            try:
                interval = Interval.from_dict(interval)
            except (KeyError, TypeError, ValueError) as exc:
                raise ValidationError(f"not an interval ({exc})", "interval") from exc
        if mode not in EXPAND_MODES:
            raise ValidationError(f"must be one of {', '.join(EXPAND_MODES)}", "mode")
        if isinstance(pad, bool) or not isinstance(pad, int) or not 0 <= pad <= MAX_PAD:
            raise ValidationError(f"must be a whole number from 0 to {MAX_PAD}", "pad")
        if interval.start < 1 or interval.end < interval.start:
            raise ValidationError("start must be ≥ 1 and end ≥ start", "interval")
        self._own(interval)
        commit = interval.commit or "HEAD"
        text = self.file_text(interval.path, commit)
        lines = text.split("\n")
        if text.endswith("\n"):
            lines = lines[:-1]
        try:
            body_start = parse_page(text, interval.path).body_start_line()
        except ValidationError:
            body_start = 1
        start, end = expand_lines(lines, interval.start, interval.end, mode, pad, body_start)
        turn_ids = tuple(
            m.group(1) for line in lines[start - 1 : end] if (m := TURN_HEADER.match(line))
        )
        new = replace(
            interval,
            start=start,
            end=end,
            kind=mode,
            turn_ids=turn_ids,
            commit=self.kb.resolve(commit) if not interval.commit else commit,
        )
        return ExpandedInterval(new, "\n".join(lines[start - 1 : end]))
