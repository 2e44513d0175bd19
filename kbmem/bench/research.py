"""``kbmem bench locomo``: the researcher on every LoCoMo question (category 5 excluded).

Reported overall and per category: ``page_coverage`` (all evidence sessions among the pages
the briefing used), ``interval_coverage`` (all evidence turns inside the briefing's evidence
excerpts), ``mean_context_tokens``, ``latency_ms_p50`` / ``latency_ms_p95``; and, measured in
the same run, one-shot baselines with the same page budget under ``baselines``. With
``--engine llm`` and a model, each question is also answered from its briefing and scored by
token F1 and BLEU-1 as in the GAM paper.

``--details FILE`` writes one JSON line per question (what it asked, the evidence, the pages
and turns the briefing used, what it missed), for finding out why a question was missed;
``--dir`` keeps the ingested knowledge base for later runs (see ``locomo_kb``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from kbmem.bench import answers
from kbmem.bench.locomo import (
    Question,
    add_keep_argument,
    conversation_files,
    load_questions,
    locomo_kb,
)
from kbmem.bench.retrieval import covered_context, session_of
from kbmem.bench.stats import percentile
from kbmem.config import load_settings
from kbmem.errors import LLMError, ValidationError
from kbmem.llm.client import LLMConfig
from kbmem.research.llm_engine import LLMEngine
from kbmem.research.researcher import Researcher
from kbmem.research.toolkit import Toolkit, fuse
from kbmem.research.types import BriefingContext
from kbmem.store.repository import KnowledgeBase
from kbmem.store.template import template_dir

BASELINE_TOP = 10
BASELINE_PAD = 2
DEPTH = 100


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--engine", choices=("offline", "llm"), default="offline")
    parser.add_argument("--model", default=None, help="litellm model for --engine llm")
    parser.add_argument(
        "--local-llm",
        action="store_true",
        help="with --engine llm: start the bundled SmolLM2 llama.cpp server for the run",
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        help="at most this many questions per conversation (quick runs)",
    )
    parser.add_argument(
        "--details",
        type=Path,
        default=None,
        metavar="FILE",
        help="write one JSON line per question: its evidence, what the briefing used, "
        "what it missed",
    )
    add_keep_argument(parser)


NO_MODEL = "--engine llm needs a model (--model, KBMEM_MODEL, or --local-llm)"


def _model_chosen(model: str | None) -> bool:
    """Whether a model is named, by ``--model`` or by the settings the benchmark's knowledge
    base gets (the template's, with the environment's overrides)."""
    return LLMConfig.from_settings(load_settings(template_dir()), model) is not None


def _blank() -> dict[str, float]:
    return defaultdict(float)


def run(
    data_dir: Path,
    engine: str = "offline",
    model: str | None = None,
    limit: int | None = None,
    local_llm: bool = False,
    details: Path | None = None,
    dir: Path | None = None,
) -> dict[str, Any]:
    if engine != "llm" and (model or local_llm):
        raise ValidationError("--model and --local-llm go with --engine llm", "--engine")
    if engine == "llm" and not local_llm and not _model_chosen(model):
        raise ValidationError(NO_MODEL, "--model")  # before minutes of ingest, not after
    if details is not None and (details.is_dir() or not details.parent.is_dir()):
        raise ValidationError(f"{details} is not a file in an existing folder", "--details")
    with locomo_kb(data_dir, dir) as built:
        kb = built.kb
        if not local_llm:
            return _run(kb, data_dir, engine, model, None, limit, details=details)
        from kbmem.llm.local import LocalLLMServer

        with LocalLLMServer() as server:
            # Prompts (and the answer) must fit the server's context window.
            room = server.n_ctx - 700
            return _run(kb, data_dir, engine, server.model, server.api_base, limit, room, details)


def _run(
    kb: KnowledgeBase,
    data_dir: Path,
    engine: str,
    model: str | None,
    api_base: str | None,
    limit: int | None,
    prompt_room: int | None = None,
    details: Path | None = None,
) -> dict[str, Any]:
    config = _llm_config(kb, model, api_base, prompt_room) if engine == "llm" else None
    k = int(kb.settings.section("research")["k"])
    max_pages = int(kb.settings.section("research")["max_pages"])
    totals: dict[str, dict[str, float]] = defaultdict(_blank)
    latencies: dict[str, list[float]] = defaultdict(list)
    lines: list[str] = []
    for path in conversation_files(data_dir):
        questions = load_questions(path)[:limit]
        if not questions:
            continue
        toolkit = Toolkit(kb, questions[0].tenant)
        toolkit.index.sync()
        researcher = Researcher(kb, questions[0].tenant, toolkit=toolkit)
        if config is not None:
            researcher.engine = LLMEngine(researcher.toolkit, config, k)
        researcher.research(questions[0].text)  # warm caches (model load) before timing
        for q in questions:
            t0 = time.perf_counter()
            briefing = researcher.research(q.text)
            ms = (time.perf_counter() - t0) * 1000
            row = _researcher_row(q, briefing, config)
            row.update(_baseline_row(toolkit, q, max_pages))
            if details is not None:
                lines.append(json.dumps(_detail(q, briefing, row, ms)))
            for group in ("overall", q.category_name):
                totals[group]["n"] += 1
                for key, value in row.items():
                    totals[group][key] += value
                latencies[group].append(ms)
        researcher.close()
    if details is not None:
        details.write_text("".join(line + "\n" for line in lines))
    return _report(totals, latencies, engine)


def _llm_config(
    kb: KnowledgeBase, model: str | None, api_base: str | None, prompt_room: int | None
) -> LLMConfig:
    """The model ``--engine llm`` researches with: the settings', overridden by the flags."""
    config = LLMConfig.from_settings(kb.settings, model)
    if config is None:
        raise ValidationError(NO_MODEL, "--model")
    if api_base:
        config = dataclasses.replace(config, api_base=api_base)
    if prompt_room:
        room = min(config.max_prompt_tokens, prompt_room)
        config = dataclasses.replace(config, max_prompt_tokens=room)
    return config


def _researcher_row(
    q: Question, briefing: BriefingContext, config: LLMConfig | None
) -> dict[str, float]:
    """What the researcher's briefing covered of one question."""
    sessions = {session_of(p) for p in briefing.pages_used}
    turns = {t for e in briefing.evidence for t in e.interval.turn_ids}
    return {
        **(_scores(config, q.text, q.answer, briefing) if config else {}),
        "page_coverage": float(q.sessions <= sessions),
        "interval_coverage": float(set(q.evidence) <= turns),
        "context_tokens": float(briefing.tokens_used),
        "reflection_steps": float(briefing.reflection_steps),
    }


def _baseline_row(toolkit: Toolkit, q: Question, max_pages: int) -> dict[str, float]:
    """What one-shot BM25 and hybrid retrieval cover of the same question."""
    row: dict[str, float] = {}
    bm25 = toolkit.bm25(q.text, DEPTH)
    dense = toolkit.dense(q.text, DEPTH)
    lists = toolkit.page_lists(q.text, "hybrid", DEPTH, bm25_hits=bm25)
    for name, hits in (
        ("bm25", bm25),
        ("hybrid", fuse({"bm25": bm25, "dense": dense}, DEPTH)),
    ):
        ranked = toolkit.pages(q.text, name, max_pages, DEPTH, lists=lists)
        pages = {session_of(p) for p in ranked}
        covered, tokens = covered_context(toolkit, hits[:BASELINE_TOP])
        row[f"{name}.page_coverage"] = float(q.sessions <= pages)
        row[f"{name}.interval_coverage"] = float(set(q.evidence) <= covered)
        row[f"{name}.context_tokens"] = float(tokens)
    return row


def _detail(
    q: Question, briefing: BriefingContext, row: dict[str, float], ms: float
) -> dict[str, Any]:
    """One question's line in ``--details``."""
    sessions = list(dict.fromkeys(session_of(p) for p in briefing.pages_used))
    turns = {t for e in briefing.evidence for t in e.interval.turn_ids}
    return {
        "tenant": q.tenant,
        "question": q.text,
        "category": q.category_name,
        "answer": q.answer,
        "evidence": q.evidence,
        "evidenceSessions": sorted(q.sessions),
        "sessionsUsed": sessions,
        "pageCovered": bool(row["page_coverage"]),
        "intervalCovered": bool(row["interval_coverage"]),
        "missingSessions": sorted(q.sessions - set(sessions)),
        "missingTurns": [t for t in q.evidence if t not in turns],
        "contextTokens": briefing.tokens_used,
        "reflectionSteps": briefing.reflection_steps,
        "latencyMs": round(ms, 1),
        "baselines": {
            name: {
                "pageCovered": bool(row[f"{name}.page_coverage"]),
                "intervalCovered": bool(row[f"{name}.interval_coverage"]),
            }
            for name in ("bm25", "hybrid")
        },
    }


def _scores(
    config: LLMConfig, question: str, gold: str, briefing: BriefingContext
) -> dict[str, float]:
    """The model's answer from the briefing, scored against the gold answer; a model failure
    scores 0 and is counted."""
    try:
        said = answers.answer(config, question, briefing)
    except LLMError:
        return {"answer_f1": 0.0, "answer_bleu1": 0.0, "answer_errors": 1.0}
    return {
        "answer_f1": answers.token_f1(said, gold),
        "answer_bleu1": answers.bleu1(said, gold),
        "answer_errors": 0.0,
    }


def _report(
    totals: dict[str, dict[str, float]], latencies: dict[str, list[float]], engine: str
) -> dict[str, Any]:
    def block(group: str) -> dict[str, Any]:
        t = totals[group]
        n = max(t["n"], 1)
        out: dict[str, Any] = {
            "questions": int(t["n"]),
            "page_coverage": round(t["page_coverage"] / n, 4),
            "interval_coverage": round(t["interval_coverage"] / n, 4),
            "mean_context_tokens": round(t["context_tokens"] / n, 1),
            "mean_reflection_steps": round(t["reflection_steps"] / n, 2),
            "latency_ms_p50": round(percentile(latencies[group], 50), 1),
            "latency_ms_p95": round(percentile(latencies[group], 95), 1),
            "baselines": {
                name: {
                    "page_coverage": round(t[f"{name}.page_coverage"] / n, 4),
                    "interval_coverage": round(t[f"{name}.interval_coverage"] / n, 4),
                    "mean_context_tokens": round(t[f"{name}.context_tokens"] / n, 1),
                }
                for name in ("bm25", "hybrid")
            },
        }
        if engine == "llm":  # the answers the model gave from the briefings, scored
            out["answer_f1"] = round(t["answer_f1"] / n, 4)
            out["answer_bleu1"] = round(t["answer_bleu1"] / n, 4)
            out["answer_errors"] = int(t["answer_errors"])
        return out

    result = {"engine": engine, **block("overall")}
    result["categories"] = {g: block(g) for g in sorted(totals) if g != "overall"}
    return result


def render(result: dict[str, Any]) -> str:
    head = (
        f"{'group':<12} {'n':>5} {'page_cov':>9} {'intv_cov':>9} {'tokens':>7} "
        f"{'p50 ms':>7} {'p95 ms':>7} | {'bm25 pc/ic/tok':>20} | {'hybrid pc/ic/tok':>20}"
    )
    lines = [f"engine: {result['engine']}", head]
    rows = [("overall", result), *list(result["categories"].items())]
    for name, r in rows:
        b, h = r["baselines"]["bm25"], r["baselines"]["hybrid"]
        lines.append(
            f"{name:<12} {r['questions']:>5} {r['page_coverage']:>9.3f} "
            f"{r['interval_coverage']:>9.3f} {r['mean_context_tokens']:>7.0f} "
            f"{r['latency_ms_p50']:>7.1f} {r['latency_ms_p95']:>7.1f} | "
            f"{b['page_coverage']:.3f}/{b['interval_coverage']:.3f}/{b['mean_context_tokens']:>4.0f}"
            f"      | {h['page_coverage']:.3f}/{h['interval_coverage']:.3f}/"
            f"{h['mean_context_tokens']:>4.0f}"
        )
    if "answer_f1" in result:
        lines.append("")
        lines.append(f"{'answers':<12} {'n':>5} {'F1':>7} {'BLEU-1':>7} {'errors':>7}")
        for name, r in rows:
            lines.append(
                f"{name:<12} {r['questions']:>5} {r['answer_f1']:>7.3f} "
                f"{r['answer_bleu1']:>7.3f} {r['answer_errors']:>7}"
            )
    return "\n".join(lines)
