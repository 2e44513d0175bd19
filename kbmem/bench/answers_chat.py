"""``kbmem bench answers``: the answer a person reads, on every LoCoMo question (categories
1–4), scored as LoCoMo and the GAM paper score answers.

Each question is asked in a fresh chat of its own (no history, nothing journaled or
committed: one question's turn never becomes memory for the next) by the offline agent or,
with ``--engine llm``, the LLM agent. The whole answer, as ``kbmem chat --no-tui`` prints it,
and its first line are each scored by token F1 and BLEU-1 (``kbmem.bench.answers``) and by
answer recall: the share of the gold answer's normalised tokens that the answer holds. The
baseline, in the same run, hands the user the single best BM25 turn. ``--limit`` and
``--conversations`` make a quick run possible. Each first line is also checked against what
its turn read (``kbmem.research.fidelity``): the run reports the share of first lines holding
a word that nothing read gives, for either engine."""

from __future__ import annotations

import argparse
import re
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

from kbmem.agent.context import TurnContext
from kbmem.agent.llm_agent import LLMAgent
from kbmem.agent.offline import OfflineAgent
from kbmem.agent.provenance import resolve_item
from kbmem.agent.tools import AgentTools
from kbmem.bench.answers import bleu1, normalize, token_f1
from kbmem.bench.locomo import (
    Question,
    add_keep_argument,
    conversation_files,
    load_questions,
    locomo_kb,
)
from kbmem.errors import ValidationError
from kbmem.llm.client import LLMConfig
from kbmem.research.fidelity import unfounded_words
from kbmem.research.researcher import Researcher
from kbmem.research.toolkit import Toolkit
from kbmem.store.repository import KnowledgeBase
from kbmem.textutil import count_tokens, json_text

NO_MODEL = "--engine llm needs a model (--model or KBMEM_MODEL)"
SCORES = ("f1", "bleu1", "recall")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--engine", choices=("offline", "llm"), default="offline")
    parser.add_argument("--model", default=None, help="litellm model for --engine llm")
    parser.add_argument(
        "--limit", type=int, default=None, help="at most this many questions per conversation"
    )
    parser.add_argument(
        "--conversations",
        default=None,
        help="comma-separated conversation file names (without .json) or 1-based positions "
        "in the folder's sorted list: only these",
    )
    parser.add_argument(
        "--dump",
        type=Path,
        default=None,
        help="write each question, its category, the gold answer and the answer given to "
        "this file, one JSON object a line",
    )
    add_keep_argument(parser)


def answer_recall(prediction: str, gold: str) -> float:
    """The share of the gold answer's distinct normalised tokens that ``prediction`` holds."""
    ref = set(normalize(gold))
    if not ref:
        return 0.0
    return len(ref & set(normalize(prediction))) / len(ref)


# A notice the agent writes in brackets before its answer ("[the model's answer was empty;
# answering offline from the briefing]"): it says how the answer was made, and is no answer.
_NOTICE = re.compile(r"^\[[^\]]*\]$")


def first_line(answer: str) -> str:
    """The answer's first line: its first non-empty line past the agent's notices."""
    lines = (line.strip() for line in answer.splitlines())
    return next((line for line in lines if line and not _NOTICE.match(line)), "")


def chosen_files(data_dir: Path, conversations: str | None) -> list[Path]:
    """The conversation files to ask, by name or 1-based position; an unknown one is refused
    with its name."""
    files = conversation_files(data_dir)
    if not conversations:
        return files
    out = []
    for wanted in (w.strip() for w in conversations.split(",") if w.strip()):
        if wanted.isdigit() and 1 <= int(wanted) <= len(files):
            out.append(files[int(wanted) - 1])
            continue
        match = [f for f in files if f.stem == wanted.removesuffix(".json")]
        if not match:
            raise ValidationError(f"no conversation {wanted!r} in {data_dir}", "--conversations")
        out.append(match[0])
    return list(dict.fromkeys(out))


def ask(
    agent: OfflineAgent | LLMAgent, tools: AgentTools, tenant: str, question: str
) -> TurnContext:
    """``question`` in a fresh chat of one turn, never journaled or committed: its context,
    with the answer the agent gave and the intervals it read."""
    ctx = TurnContext(
        chat_id="bench-answers",
        turn=1,
        tenant=tenant,
        message=question,
        history=[],
        tools=tools,
        emit=lambda _event: None,
        cancel_event=threading.Event(),
    )
    agent.run(ctx)
    return ctx


def read_texts(kb: KnowledgeBase, ctx: TurnContext) -> list[str]:
    """The lines of every interval the turn read, as they were at the commit it read them
    from (the provenance an audit resolves)."""
    return [resolve_item(kb, ctx.tenant, item).text for item in ctx.context]


def _scores(prediction: str, gold: str) -> dict[str, float]:
    return {
        "f1": token_f1(prediction, gold),
        "bleu1": bleu1(prediction, gold),
        "recall": answer_recall(prediction, gold),
    }


def run(
    data_dir: Path,
    engine: str = "offline",
    model: str | None = None,
    limit: int | None = None,
    conversations: str | None = None,
    dir: Path | None = None,
    dump: Path | None = None,
) -> dict[str, Any]:
    if limit is not None and limit < 1:
        raise ValidationError("must be at least 1", "--limit")
    if engine != "llm" and model:
        raise ValidationError("--model goes with --engine llm", "--engine")
    files = chosen_files(data_dir, conversations)
    with locomo_kb(data_dir, dir) as built:
        config = LLMConfig.from_settings(built.kb.settings, model) if engine == "llm" else None
        if engine == "llm" and config is None:
            raise ValidationError(NO_MODEL, "--model")
        agent: OfflineAgent | LLMAgent = OfflineAgent() if config is None else LLMAgent(config)
        return _run(built.kb, files, agent, limit, dump)


def _run(
    kb: KnowledgeBase,
    files: list[Path],
    agent: OfflineAgent | LLMAgent,
    limit: int | None,
    dump: Path | None = None,
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for path in files:
        questions: list[Question] = load_questions(path)[:limit]
        if not questions:
            continue
        toolkit = Toolkit(kb, questions[0].tenant)
        researcher = Researcher(kb, questions[0].tenant, toolkit=toolkit)
        tools = AgentTools(kb, questions[0].tenant, researcher)
        try:
            for q in questions:
                ctx = ask(agent, tools, q.tenant, q.text)
                said = ctx.answer
                unfounded = unfounded_words(first_line(said), read_texts(kb, ctx))
                hits = toolkit.bm25(q.text, 1)
                baseline = hits[0].excerpt if hits else ""
                row = {
                    **{
                        f"first_line.{k}": v for k, v in _scores(first_line(said), q.answer).items()
                    },
                    **{f"answer.{k}": v for k, v in _scores(said, q.answer).items()},
                    "answer.tokens": float(count_tokens(said)),
                    "bm25_turn.f1": token_f1(baseline, q.answer),
                    "bm25_turn.recall": answer_recall(baseline, q.answer),
                    "first_line.unfounded": float(bool(unfounded)),
                }
                rows.append(
                    {
                        "conversation": path.stem,
                        "category": q.category_name,
                        "question": q.text,
                        "gold": q.answer,
                        "answer": said,
                        "first_line.unfounded_words": unfounded,
                        **row,
                    }
                )
                for group in ("overall", q.category_name):
                    totals[group]["n"] += 1
                    for key, value in row.items():
                        totals[group][key] += value
        finally:
            researcher.close()
    if dump is not None:
        dump.write_text("".join(json_text(r) + "\n" for r in rows), encoding="utf-8")
    return _report(totals, agent.name)


def _report(totals: dict[str, dict[str, float]], engine: str) -> dict[str, Any]:
    def block(group: str) -> dict[str, Any]:
        t = totals[group]
        n = max(t["n"], 1)
        return {
            "questions": int(t["n"]),
            "first_line": {k: round(t[f"first_line.{k}"] / n, 4) for k in SCORES},
            "answer": {
                **{k: round(t[f"answer.{k}"] / n, 4) for k in SCORES},
                "mean_tokens": round(t["answer.tokens"] / n, 1),
            },
        }

    overall = block("overall")
    t, n = totals["overall"], max(totals["overall"]["n"], 1)
    return {
        "engine": engine,
        **overall,
        "categories": {g: block(g) for g in sorted(totals) if g != "overall"},
        # The share of first lines holding a word nothing the turn read gives.
        "fidelity": {"first_line_unfounded": round(t["first_line.unfounded"] / n, 4)},
        "baselines": {
            "bm25_turn": {
                "f1": round(t["bm25_turn.f1"] / n, 4),
                "recall": round(t["bm25_turn.recall"] / n, 4),
            }
        },
    }


def render(result: dict[str, Any]) -> str:
    head = (
        f"{'group':<12} {'n':>5} | {'first F1/BLEU/rec':>20} | {'answer F1/BLEU/rec':>20} "
        f"{'tok':>5}"
    )
    lines = [f"engine: {result['engine']}", head]
    for name, r in [("overall", result), *result["categories"].items()]:
        f, a = r["first_line"], r["answer"]
        lines.append(
            f"{name:<12} {r['questions']:>5} | {f['f1']:.3f}/{f['bleu1']:.3f}/{f['recall']:.3f}"
            f"    | {a['f1']:.3f}/{a['bleu1']:.3f}/{a['recall']:.3f}    {a['mean_tokens']:>5.0f}"
        )
    b = result["baselines"]["bm25_turn"]
    lines.append(f"baseline: best BM25 turn F1 {b['f1']:.3f}, recall {b['recall']:.3f}")
    unfounded = result["fidelity"]["first_line_unfounded"]
    lines.append(f"first lines holding a word nothing read gives: {unfounded:.1%}")
    return "\n".join(lines)
