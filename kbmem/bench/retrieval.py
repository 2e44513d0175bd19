"""``kbmem bench retrieval``: one-shot retrieval quality on LoCoMo for bm25, dense, hybrid.

Page recall@k: all of a question's evidence sessions are among the top k pages, as
``Toolkit.pages`` ranks them: page-level BM25 fused with the pages of the best BM25 intervals
(bm25), the pages of the nearest intervals (dense), or all three (hybrid). Interval coverage:
all its evidence turns lie inside the top 10 intervals, each expanded by one turn on either
side, as the toolkit expands them; mean tokens counts the union of that expanded text."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from kbmem.bench.locomo import add_keep_argument, conversation_files, load_questions, locomo_kb
from kbmem.index.tenant import Hit
from kbmem.research.toolkit import Toolkit, fuse
from kbmem.store.repository import KnowledgeBase
from kbmem.textutil import count_tokens

PAGE_KS = (1, 3, 5, 8)
TOP_INTERVALS = 10
PAD = 1
DEPTH = 200


def session_of(page_id: str) -> str:
    return page_id.rsplit("/", 1)[0]


def covered_context(toolkit: Toolkit, hits: list[Hit]) -> tuple[set[str], int]:
    """Turn ids inside the expanded intervals, and the tokens of their union."""
    lines_by_file: dict[tuple[str, str], set[int]] = {}
    turns: set[str] = set()
    for hit in hits:
        expanded = toolkit.expand(hit.interval, "turn", PAD)
        turns.update(expanded.interval.turn_ids)
        key = (expanded.interval.path, expanded.interval.commit)
        lines_by_file.setdefault(key, set()).update(
            range(expanded.interval.start, expanded.interval.end + 1)
        )
    tokens = 0
    for (path, commit), numbers in lines_by_file.items():
        lines = toolkit.file_text(path, commit).split("\n")
        tokens += count_tokens("\n".join(lines[n - 1] for n in sorted(numbers)))
    return turns, tokens


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_keep_argument(parser)


def run(data_dir: Path, dir: Path | None = None) -> dict[str, Any]:
    with locomo_kb(data_dir, dir) as built:
        return _run(built.kb, data_dir, built.ingest_seconds)


def _run(kb: KnowledgeBase, data_dir: Path, ingest_seconds: float | None) -> dict[str, Any]:
    tools = ("bm25", "dense", "hybrid")
    page_hits = {t: {k: 0 for k in PAGE_KS} for t in tools}
    covered = dict.fromkeys(tools, 0)
    tokens = dict.fromkeys(tools, 0)
    questions = 0
    started = time.perf_counter()
    index_seconds = 0.0
    for path in conversation_files(data_dir):
        qs = load_questions(path)
        toolkit = Toolkit(kb, qs[0].tenant if qs else path.stem)
        t0 = time.perf_counter()
        toolkit.index.sync()
        index_seconds += time.perf_counter() - t0
        for q in qs:
            questions += 1
            bm25 = toolkit.bm25(q.text, DEPTH)
            dense = toolkit.dense(q.text, DEPTH)
            hit_lists = {
                "bm25": bm25,
                "dense": dense,
                "hybrid": fuse({"bm25": bm25, "dense": dense}, DEPTH),
            }
            page_lists = toolkit.page_lists(q.text, "hybrid", DEPTH, bm25_hits=bm25)
            for tool, hits in hit_lists.items():
                ranked = toolkit.pages(q.text, tool, DEPTH, DEPTH, lists=page_lists)
                pages = [session_of(p) for p in ranked]
                for k in PAGE_KS:
                    if q.sessions <= set(pages[:k]):
                        page_hits[tool][k] += 1
                turns, n_tokens = covered_context(toolkit, hits[:TOP_INTERVALS])
                covered[tool] += set(q.evidence) <= turns
                tokens[tool] += n_tokens
    n = max(questions, 1)
    return {
        "questions": questions,
        "ingest_seconds": None if ingest_seconds is None else round(ingest_seconds, 2),
        "index_seconds": round(index_seconds, 2),
        "query_seconds": round(time.perf_counter() - started - index_seconds, 2),
        "tools": {
            tool: {
                "page_recall": {str(k): round(page_hits[tool][k] / n, 4) for k in PAGE_KS},
                "interval_coverage": round(covered[tool] / n, 4),
                "mean_tokens": round(tokens[tool] / n, 1),
            }
            for tool in tools
        },
    }


def render(result: dict[str, Any]) -> str:
    ingest = result["ingest_seconds"]
    lines = [
        f"questions: {result['questions']}  "
        f"(ingest {'reused' if ingest is None else f'{ingest} s'}, "
        f"index {result['index_seconds']} s, queries {result['query_seconds']} s)",
        f"{'tool':<8}" + "".join(f"  R@{k:<4}" for k in PAGE_KS) + "  coverage  tokens",
    ]
    for tool, row in result["tools"].items():
        lines.append(
            f"{tool:<8}"
            + "".join(f"  {row['page_recall'][str(k)]:.3f}" for k in PAGE_KS)
            + f"  {row['interval_coverage']:.3f}     {row['mean_tokens']:.0f}"
        )
    return "\n".join(lines)
