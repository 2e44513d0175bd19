"""``kbmem bench scale``: what the indexes cost on a synthetic knowledge base of N pages.

The knowledge base is generated from a seeded random number generator (names, places, projects,
amounts, dates and a few thousand made-up words drawn with a Zipf-like skew, so that BM25 has
rare and common terms to tell apart), written as session pages in the memorizer's format (plus
one hand-written note in twenty) and committed in bulk. Then:

- the full build time of the index at 1,000 pages and at N;
- the cost of syncing one new page (one commit adding one page), median of a few repeats, at
  1,000 pages and at N: it must not grow with N; also one edited page at N, and the first
  hybrid query after a commit (which syncs first);
- query latency p50/p95 of bm25, dense and hybrid (k=10, as the researcher asks) over distinct
  queries, through the toolkit (so every query also checks whether HEAD moved);
- peak RSS of the process and the index's size on disk.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbmem.bench.stats import add_dir_argument, peak_rss_mb, percentile, tree_bytes
from kbmem.errors import ValidationError
from kbmem.index import embedder
from kbmem.index.tenant import TenantIndex
from kbmem.memorize.template import init_kb
from kbmem.research.toolkit import TOOLS, Toolkit
from kbmem.store.pages import Page, Turn, render_page, render_turns
from kbmem.store.repository import KnowledgeBase

TENANT = "bench"
SMALL = 1000
COMMIT_CHUNK = 1000
SYNC_REPEATS = 5
MAX_PAGES = 100_000
# The size a run's figures are projected to (from its two measured sizes; see _projection).
PROJECTED_PAGES = 100_000

FIRST = (
    "Ada Bram Cleo Dmitri Elif Farid Greta Hugo Ilse Jonas Kaia Lior Mira Nadia Omar Petra "
    "Quinn Rosa Soren Tamsin Ugo Vera Wiktor Xenia Yusuf Zora Anouk Bastian Carmen Dario "
    "Esme Felix Ines Joaquin Katya Lucan Maren Nico Oona Pavel"
).split()
LAST = (
    "Abernethy Brandt Castellano Dunmore Eriksen Fairweather Gallagher Hollis Ibarra Jansen "
    "Kowalczyk Lindgren Mbeki Novak Okonkwo Pellegrini Quist Rasmussen Szabo Thorne Uddin "
    "Varga Whitlock Yilmaz Zeller Achterberg Bellweather Corcoran Delacroix Esposito"
).split()
PLACES = (
    "Aberdeen Bergen Cork Dundee Esbjerg Faro Galway Hamburg Inverness Juneau Kiel Lisbon "
    "Malmo Nantes Oban Porto Quimper Rostock Stavanger Tromso Umea Valencia Wick Ystad "
    "Zeebrugge Antwerp Brest Cadiz Dover Eastbourne Flensburg Gdansk Harwich Ipswich Larne "
    "Mallaig Narvik Ostend Plymouth Riga Sligo Tallinn Ullapool Vigo Whitby"
).split()
PROJECTS = (
    "Albatross Beacon Cormorant Driftwood Estuary Fathom Gannet Halyard Isobar Jetsam Kelp "
    "Lodestar Mooring Nautilus Osprey Pelican Quayside Riptide Saltmarsh Tidewater Undertow "
    "Voyager Windlass Yardarm Zephyr"
).split()
OBJECTS = (
    "invoice manifest roster gangway tablet firmware crane forklift contract budget schedule "
    "timetable dashboard backup pipeline migration report audit license warehouse pallet "
    "container barcode scanner printer server database certificate permit forecast payroll "
    "newsletter prototype sensor battery charger antenna radar winch hull propeller engine "
    "generator ferry trailer van ticket kiosk website app checklist handbook"
).split()
ADJS = (
    "late urgent broken new old spare quarterly monthly annual weekly damaged upgraded "
    "delayed draft final revised missing backup secondary primary cheap expensive"
).split()
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
MONTHS = (
    "January February March April May June July August September October November December"
).split()
SYLLABLES = (
    "ka lo mi ne ru sa ti vo ba de fi gu ho ja ke li mo nu pa re si to va we xa yo zu "
    "bra cle dri fro gla kri plo sta tre vri"
).split()

TEMPLATES = (
    "{p} will meet {q} in {place} on {day} {date} {month} to go over the {project} {obj}.",
    "The {obj} budget for {project} is {amount} euros, approved by {p} last {day}.",
    "{p} says the {adj} {obj} in {place} failed {n} times this week.",
    "Ticket {ticket} about the {adj} {obj} is assigned to {p}, due {day}.",
    "We should move the {project} launch to {month}, the {obj} in {place} is not ready.",
    "Can you send me the {obj} numbers for {place} before {day}?",
    "{p} ordered {n} new {obj}s from the supplier in {place} for {amount} euros.",
    "Reminder: the {project} review with {q} moved to {day} {date} {month}.",
    "The {obj} from {place} arrived {adj}; {p} is chasing the {word} paperwork.",
    "I talked to {q} about the {word} {obj}; it should be fixed by {month}.",
    "{p} asked whether {project} can reuse the {obj} we built for {other}.",
    "Numbers for {month}: {n} sailings out of {place}, {amount} passengers, {m} cancellations.",
)
SMALL_TALK = (
    "Thanks, {q}.",
    "Sounds good to me.",
    "Agreed, let's do that.",
    "I'll check and come back to you.",
    "Good morning everyone.",
    "Noted, {q}.",
    "Any objections? None, then it's decided.",
)


class Corpus:
    """Deterministic synthetic pages: the same seed gives the same knowledge base."""

    def __init__(self, seed: int = 7):
        self.rng = random.Random(seed)
        words: set[str] = set()
        while len(words) < 3000:
            words.add("".join(self.rng.choice(SYLLABLES) for _ in range(self.rng.randint(2, 4))))
        self.words = sorted(words)
        self.rng.shuffle(self.words)
        self.weights = [1.0 / (rank + 10) for rank in range(len(self.words))]
        self.people = [f"{f} {ln}" for f in FIRST for ln in LAST]
        self.rng.shuffle(self.people)

    def word(self) -> str:
        return self.rng.choices(self.words, self.weights)[0]

    def fill(self, template: str, people: list[str]) -> str:
        r = self.rng
        return template.format(
            p=r.choice(people).split()[0],
            q=r.choice(people).split()[0],
            place=r.choice(PLACES),
            project=r.choice(PROJECTS),
            other=r.choice(PROJECTS),
            obj=r.choice(OBJECTS),
            adj=r.choice(ADJS),
            day=r.choice(DAYS),
            month=r.choice(MONTHS),
            date=r.randint(1, 28),
            n=r.randint(2, 90),
            m=r.randint(0, 9),
            amount=f"{r.randint(1, 250) * 100:,}",
            ticket=f"OPS-{r.randint(100, 9999)}",
            word=self.word(),
        )

    def turn_text(self, people: list[str]) -> str:
        r = self.rng
        if r.random() < 0.15:
            return self.fill(r.choice(SMALL_TALK), people)
        sentences = [self.fill(r.choice(TEMPLATES), people) for _ in range(r.randint(1, 2))]
        if r.random() < 0.3:
            sentences.append(
                " ".join(self.word() for _ in range(r.randint(3, 8))).capitalize() + "."
            )
        return " ".join(sentences)

    def session_page(self, n: int) -> tuple[str, bytes]:
        """Page number ``n``: path and file bytes (a session page in the memorizer's format)."""
        r = self.rng
        people = r.sample(self.people, r.randint(2, 4))
        project = r.choice(PROJECTS)
        sid = f"s{n:06d}-{project.lower()}"
        day = 1 + n % 28
        stamp = f"2025-{1 + n % 12:02d}-{day:02d}T09:00:00"
        turns = [
            Turn(f"t{i}", r.choice(people), stamp, self.turn_text(people))
            for i in range(1, r.randint(4, 8) + 1)
        ]
        title = f"{project} sync with {people[0].split()[0]} in {r.choice(PLACES)}"
        meta = {
            "id": f"{sid}/1",
            "session_id": sid,
            "tenant_id": TENANT,
            "agent_id": "bench",
            "sequence": 1,
            "title": title,
            "created_at": stamp,
            "tags": sorted({project.lower(), r.choice(OBJECTS)}),
            "classification": r.choice(("internal", "internal", "confidential")),
            "policy_tags": [],
            "turns": [turns[0].id, turns[-1].id],
        }
        body = f"# {title} (page 1)\n\n" + render_turns(turns)
        page = Page(meta=meta, body=body)
        return f"tenants/{TENANT}/pages/{sid}/1.md", render_page(page).encode()

    def note(self, n: int) -> tuple[str, bytes]:
        """A hand-written note: a title, sections, paragraphs."""
        r = self.rng
        people = r.sample(self.people, 3)
        project = r.choice(PROJECTS)
        parts = [
            "---",
            f"title: {project} notes {n}",
            f"tags: [{project.lower()}, notes]",
            "---",
            f"# {project} notes {n}",
            "",
        ]
        for _ in range(r.randint(2, 3)):
            parts += [f"## {r.choice(ADJS).capitalize()} {r.choice(OBJECTS)}", ""]
            for _ in range(r.randint(1, 3)):
                parts += [self.turn_text(people), ""]
        return f"tenants/{TENANT}/notes/n{n:06d}.md", "\n".join(parts).encode()

    def page(self, n: int) -> tuple[str, bytes]:
        return self.note(n) if n % 20 == 19 else self.session_page(n)

    def pages(self, start: int, stop: int) -> Iterator[tuple[str, bytes]]:
        for n in range(start, stop):
            yield self.page(n)

    def queries(self, count: int) -> list[str]:
        """Distinct queries: questions in the corpus's words, and bags of its rarer terms."""
        r = self.rng
        forms = (
            "Who approved the {obj} budget for {project}?",
            "When is {p} meeting {q} in {place}?",
            "what happened to the {adj} {obj} in {place}",
            "{project} launch {month}",
            "ticket {ticket}",
            "{word} {word2} {obj}",
            "How many {obj}s were ordered from {place}?",
            "{p} {place} {project}",
        )
        seen: dict[str, None] = {}
        while len(seen) < count:
            q = r.choice(forms).format(
                p=r.choice(self.people).split()[0],
                q=r.choice(self.people).split()[0],
                place=r.choice(PLACES),
                project=r.choice(PROJECTS),
                obj=r.choice(OBJECTS),
                adj=r.choice(ADJS),
                month=r.choice(MONTHS),
                ticket=f"OPS-{r.randint(100, 9999)}",
                word=self.word(),
                word2=self.word(),
            )
            seen.setdefault(q, None)
        return list(seen)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pages", type=int, default=SMALL, help="pages to generate (1000)")
    parser.add_argument("--queries", type=int, default=120, help="distinct queries per tool (120)")
    parser.add_argument("--seed", type=int, default=7, help="random seed (7)")
    add_dir_argument(parser)


def _say(message: str) -> None:
    print(f"[scale {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def commit_pages(kb: KnowledgeBase, corpus: Corpus, start: int, stop: int) -> None:
    for lo in range(start, stop, COMMIT_CHUNK):
        hi = min(stop, lo + COMMIT_CHUNK)
        kb.commit_files(dict(corpus.pages(lo, hi)), f"Add synthetic pages {lo}..{hi - 1}")


def time_full_build(index: TenantIndex) -> tuple[float, int]:
    started = time.perf_counter()
    report = index.sync(full=True)
    seconds = time.perf_counter() - started
    if report.mode != "full":
        raise RuntimeError(f"expected a full build, got {report}")
    gen = index.current()
    assert gen is not None
    return seconds, gen.count


def written_bytes(path: Path) -> int:
    """Bytes of the files in generation ``path`` that its sync wrote: the others are hard
    links of the generation before (kept until the next sync collects it)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            stat = os.stat(os.path.join(root, name))
            if stat.st_nlink == 1:
                total += stat.st_size
    return total


def time_one_page_syncs(
    kb: KnowledgeBase, index: TenantIndex, corpus: Corpus, first: int, repeats: int
) -> tuple[list[float], list[int]]:
    """Seconds of each incremental sync after a commit that adds one page, and the bytes it
    wrote to the index."""
    times, written = [], []
    for n in range(first, first + repeats):
        kb.commit_files(dict([corpus.session_page(n)]), f"Add page {n}")
        started = time.perf_counter()
        report = index.sync()
        times.append(time.perf_counter() - started)
        if report.mode != "incremental" or report.pages_changed != 1:
            raise RuntimeError(f"expected an incremental one-page sync, got {report}")
        gen = index.current()
        assert gen is not None
        written.append(written_bytes(gen.path))
    return times, written


def time_queries(toolkit: Toolkit, queries: list[str], k: int = 10) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for tool in TOOLS:
        for q in queries[:5]:  # warm up: model loaded, searchers open, vectors in memory
            toolkit.search(q + " warmup", tool, k)
        latencies, empty = [], 0
        for q in queries:
            started = time.perf_counter()
            hits = toolkit.search(q, tool, k)
            latencies.append((time.perf_counter() - started) * 1000)
            empty += not hits
        out[tool] = {
            "p50": round(percentile(latencies, 50), 2),
            "p95": round(percentile(latencies, 95), 2),
            "mean": round(statistics.fmean(latencies), 2),
            "queries": len(queries),
            "no_hits": empty,
        }
    return out


def run(
    pages: int = SMALL, queries: int = 120, seed: int = 7, dir: Path | None = None
) -> dict[str, Any]:
    if not 1 <= pages <= MAX_PAGES:
        raise ValidationError(f"must be from 1 to {MAX_PAGES}", "--pages")
    if not 100 <= queries <= 10_000:
        raise ValidationError("must be from 100 to 10000", "--queries")
    if dir is not None and dir.exists() and any(dir.iterdir()):
        raise ValidationError(f"{dir} exists and is not empty", "--dir")
    root = dir or Path(tempfile.mkdtemp(prefix="kbmem-scale-")) / "kb"
    try:
        return _run(root, pages, queries, seed)
    finally:
        if dir is None:
            shutil.rmtree(root.parent, ignore_errors=True)


@dataclass
class _Stage:
    """What the benchmark measured at each knowledge-base size."""

    commit_seconds: float = 0.0
    full_build: dict[str, float] = field(default_factory=dict)
    sync_one: dict[str, float] = field(default_factory=dict)
    sync_one_max: dict[str, float] = field(default_factory=dict)
    sync_one_written: dict[str, list[int]] = field(default_factory=dict)
    intervals: dict[str, int] = field(default_factory=dict)
    peak_rss_mb: dict[str, float] = field(default_factory=dict)  # once each size is measured
    # The number of the next page committed one at a time (past the run's last page).
    extra: int = 0


def _grow_and_measure(
    kb: KnowledgeBase, index: TenantIndex, corpus: Corpus, stage: _Stage, first: int, pages: int
) -> None:
    """Commit pages ``first``..``pages``, then time a full build and one-page syncs at that
    size (the pages those syncs add are numbered past the run's last page: see _extra)."""
    started = time.perf_counter()
    commit_pages(kb, corpus, first, pages)
    stage.commit_seconds += time.perf_counter() - started
    _say(f"committed {pages} pages; full build at {pages}")
    seconds, count = time_full_build(index)
    stage.full_build[str(pages)], stage.intervals[str(pages)] = round(seconds, 2), count
    _say(f"full build at {pages} pages: {count} intervals in {seconds:.1f} s")
    times, written = time_one_page_syncs(kb, index, corpus, stage.extra, SYNC_REPEATS)
    stage.sync_one_written[str(pages)] = written
    stage.extra += SYNC_REPEATS
    stage.sync_one[str(pages)] = round(statistics.median(times), 3)
    stage.sync_one_max[str(pages)] = round(max(times), 3)
    _say(f"one-page sync at {pages}: {[round(t, 3) for t in times]} s, wrote {written} bytes")
    stage.peak_rss_mb[str(pages)] = round(peak_rss_mb(), 1)


def _time_edit(kb: KnowledgeBase, index: TenantIndex) -> float:
    """Seconds to sync one edited page (its old intervals deleted, the new ones added)."""
    path = min(kb.list_files(f"tenants/{TENANT}/pages"))
    data = kb.read_bytes(path)
    edited = data.replace(b"\n### t2 |", b"\nAn added line.\n\n### t2 |", 1)
    kb.commit_files({path: edited}, "Edit one page")
    started = time.perf_counter()
    report = index.sync()
    if report.mode != "incremental":
        raise RuntimeError(f"expected an incremental sync, got {report}")
    return time.perf_counter() - started


def _run(root: Path, pages: int, n_queries: int, seed: int) -> dict[str, Any]:
    load_start = os.getloadavg()
    corpus = Corpus(seed)
    kb = init_kb(root, with_history=False)
    toolkit = Toolkit(kb, TENANT)
    index = toolkit.index
    small = min(SMALL, pages)
    stage = _Stage(extra=pages)
    _grow_and_measure(kb, index, corpus, stage, 0, small)
    if pages > small:
        _grow_and_measure(kb, index, corpus, stage, small, pages)
    sync_edit = _time_edit(kb, index)

    qs = Corpus(seed + 1).queries(n_queries)
    # A search first checks whether HEAD moved and syncs: the first query after a commit.
    kb.commit_files(dict([corpus.session_page(stage.extra)]), "Add one more page")
    started = time.perf_counter()
    toolkit.hybrid(qs[0], 10)
    first_query_after_commit = (time.perf_counter() - started) * 1000
    _say(f"timing {len(qs)} queries per tool")
    query_ms = time_queries(toolkit, qs)
    gen = index.current()
    assert gen is not None
    built = stage.full_build[str(pages)]
    index_bytes = tree_bytes(gen.path)
    rate = stage.intervals[str(pages)] / built
    per_interval = index_bytes / max(gen.count, 1)
    return {
        "pages": pages,
        "intervals": stage.intervals[str(pages)],
        "commit_pages_s": round(stage.commit_seconds, 2),
        "full_build_s": built,
        "full_build_s_by_pages": stage.full_build,
        "intervals_by_pages": stage.intervals,
        "embed_intervals_per_s": round(stage.intervals[str(pages)] / built, 1),
        "sync_one_page_s": stage.sync_one,
        "sync_one_page_max_s": stage.sync_one_max,
        "sync_one_page_written_bytes": stage.sync_one_written,
        "sync_one_edit_s": round(sync_edit, 3),
        "first_hybrid_after_commit_ms": round(first_query_after_commit, 1),
        "query_ms": query_ms,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "index_bytes": index_bytes,
        "index_bytes_per_interval": round(per_interval),
        "peak_rss_mb_by_pages": stage.peak_rss_mb,
        "projected": _projection(stage, pages, small, rate, per_interval),
        "kb": str(root),
        # Other work on the machine slows every figure above: say how busy it was.
        "machine": {
            "cpus": os.cpu_count(),
            "embed_threads": embedder.threads(),
            "load_avg_1m_start": round(load_start[0], 2),
            "load_avg_1m_end": round(os.getloadavg()[0], 2),
        },
    }


def _projection(
    stage: _Stage, pages: int, small: int, rate: float, per_interval: float
) -> dict[str, Any] | None:
    """Figures at PROJECTED_PAGES pages, projected from this run, not measured: the intervals
    a page has, the index's bytes per interval and the build's intervals per second as
    measured at ``pages``; the one-page sync and the peak memory growing on as they grew
    from ``small`` pages to ``pages`` (a sync that measured faster at ``pages`` than at
    ``small``, within the noise of five syncs, is projected as measured at ``pages``, not
    faster still). None for a run of one size."""
    if pages <= small or pages >= PROJECTED_PAGES:
        return None
    n, s = str(pages), str(small)
    intervals = round(stage.intervals[n] / pages * PROJECTED_PAGES)
    grown = (intervals - stage.intervals[s]) / (stage.intervals[n] - stage.intervals[s])
    sync_small, rss_small = stage.sync_one[s], stage.peak_rss_mb[s]
    sync = sync_small + (stage.sync_one[n] - sync_small) * grown
    return {
        "pages": PROJECTED_PAGES,
        "intervals": intervals,
        "index_bytes": round(per_interval * intervals),
        "full_build_s": round(intervals / rate, 1),
        "sync_one_page_s": round(max(stage.sync_one[n], sync), 3),
        "peak_rss_mb": round(rss_small + (stage.peak_rss_mb[n] - rss_small) * grown, 1),
        "basis": f"projected from the figures measured at {small} and {pages} pages, not measured",
    }


def render(result: dict[str, Any]) -> str:
    n = str(result["pages"])
    lines = [
        f"pages {result['pages']}  intervals {result['intervals']}  "
        f"(committed in {result['commit_pages_s']} s)",
        "full build: "
        + ", ".join(f"{p} pages {s} s" for p, s in result["full_build_s_by_pages"].items())
        + f"  ({result['embed_intervals_per_s']} intervals/s)",
        "one-page sync (median of "
        f"{SYNC_REPEATS}): "
        + ", ".join(
            f"{p} pages {s} s (max {result['sync_one_page_max_s'][p]})"
            for p, s in result["sync_one_page_s"].items()
        ),
        "bytes a one-page sync wrote to the index: "
        + ", ".join(f"{p} pages {w}" for p, w in result["sync_one_page_written_bytes"].items()),
        f"one edited page at {n}: {result['sync_one_edit_s']} s;  first hybrid query after a "
        f"commit: {result['first_hybrid_after_commit_ms']} ms",
        f"{'query (ms)':<12}{'p50':>8}{'p95':>8}{'mean':>8}",
    ]
    for tool, row in result["query_ms"].items():
        lines.append(f"{tool:<12}{row['p50']:>8}{row['p95']:>8}{row['mean']:>8}")
    lines.append(
        f"peak RSS {result['peak_rss_mb']} MB;  index on disk {result['index_bytes'] / 1e6:.1f} MB"
        f" ({result['index_bytes_per_interval']} bytes per interval)"
    )
    machine = result["machine"]
    lines.append(
        f"machine: {machine['cpus']} CPUs, model on {machine['embed_threads']} thread(s), "
        f"load average {machine['load_avg_1m_start']} at the start, "
        f"{machine['load_avg_1m_end']} at the end"
    )
    projected = result.get("projected")
    if projected:
        lines.append(
            f"projected, not measured, to {projected['pages']} pages ({projected['intervals']} "
            f"intervals): index {projected['index_bytes'] / 1e9:.2f} GB, full build "
            f"{projected['full_build_s'] / 3600:.1f} h, one-page sync "
            f"{projected['sync_one_page_s']} s, peak RSS {projected['peak_rss_mb']} MB"
        )
    if result["pages"] >= 10_000:
        lines.append("targets at 10,000 pages: " + "; ".join(_targets(result)))
    return "\n".join(lines)


def _targets(result: dict[str, Any]) -> list[str]:
    """Issue 37's targets for a run of 10,000 pages, each with its figure and whether it was
    met."""
    n, small = str(result["pages"]), str(SMALL)
    hybrid = result["query_ms"]["hybrid"]["p50"]
    sync_n, sync_small = result["sync_one_page_s"][n], result["sync_one_page_s"][small]
    checks = (
        (f"hybrid p50 {hybrid} ms (<= 25)", hybrid <= 25),
        (f"one-page sync {sync_n} s (<= 0.3)", sync_n <= 0.3),
        (f"{sync_n / sync_small:.2f}x the sync at {SMALL} pages (<= 1.2)",
         sync_n <= 1.2 * sync_small),
        (f"index {result['index_bytes_per_interval']} bytes per interval (<= 8,192)",
         result["index_bytes_per_interval"] <= 8192),
        (f"peak RSS {result['peak_rss_mb']} MB (<= 1,024)", result["peak_rss_mb"] <= 1024),
        (f"build {result['embed_intervals_per_s']} intervals/s (>= 150)",
         result["embed_intervals_per_s"] >= 150),
    )  # fmt: skip
    return [f"{text} {'met' if ok else 'MISSED'}" for text, ok in checks]
