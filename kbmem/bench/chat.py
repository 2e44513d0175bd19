"""``kbmem bench chat``: offline chat turns on the example knowledge base.

A fresh copy of the example knowledge base (``kbmem.memorize.template.init_kb``) gets one chat of
``--turns`` offline turns (default 50) cycling through the template's questions, with batch
commits every ``chat.batch_turns`` turns as in real use. Reported: turn latency p50/p95
(journal fsync included; the turns that ran a batch commit are timed without it), the batch
commit's own cost (p50 and max, snapshots plus re-memorizing the growing chat session), the
turn right after each batch apart (its research first brings the index up to the new commit,
embedding the chat's new turns: the rest of what a batch costs), and the first turn (model
and index loading) apart. Target: offline turn p50 ≤ 300 ms."""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kbmem.agent.events import AgentEvent, BatchCommitted
from kbmem.agent.session import ChatSession
from kbmem.bench.stats import percentile
from kbmem.memorize.template import init_kb

TARGET_P50_MS = 300.0
QUESTIONS = Path(__file__).resolve().parents[2] / "tests" / "data" / "template_questions.yaml"
FALLBACK_QUESTIONS = [
    "Where will the team offsite be?",
    "Who owns FL-212?",
    "When did Femi Adeyemi start?",
    "What happened in the Calloway incident?",
    "Which datastore did the team choose and why?",
    "When was the cutover to PostgreSQL?",
    "Who is the onboarding buddy of Femi Adeyemi?",
    "What did Morag ask for in the weekly report?",
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--turns", type=int, default=50, help="offline turns to time")


def questions() -> list[str]:
    """The template's questions (tests/data), else a built-in list."""
    try:
        data = yaml.safe_load(QUESTIONS.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return FALLBACK_QUESTIONS
    items = data.get("questions", data) if isinstance(data, dict) else data
    out = []
    for item in items or []:
        text = item.get("question") if isinstance(item, dict) else item
        if isinstance(text, str) and text.strip():
            out.append(text.strip())
    return out or FALLBACK_QUESTIONS


@dataclass
class _Turns:
    """The timings of a chat's turns, the first (which loads the model and index) apart."""

    latencies: list[float] = field(default_factory=list)
    after_batch: list[float] = field(default_factory=list)  # turns whose research synced a batch
    first_ms: float = 0.0
    statuses: dict[str, int] = field(default_factory=dict)
    answered: int = 0


def _ask_all(chat: ChatSession, commits: list[float], turns: int) -> _Turns:
    """Send ``turns + 1`` questions; a turn's own time leaves out the batch commit it ran."""
    asked = questions()
    out = _Turns()
    committed = False  # whether the turn before ran a batch commit
    for n in range(turns + 1):
        before = len(commits)
        t0 = time.perf_counter()
        record = chat.send(asked[n % len(asked)])
        ms = (time.perf_counter() - t0) * 1000
        synced, committed = committed, len(commits) > before
        if committed:
            ms -= commits[-1]
        if n == 0:
            out.first_ms = ms
            continue
        out.latencies.append(ms)
        if synced:
            out.after_batch.append(ms)
        out.statuses[record.status] = out.statuses.get(record.status, 0) + 1
        out.answered += any(c.cited for c in record.context)
    return out


def run(turns: int = 50) -> dict[str, Any]:
    if turns < 1:
        raise ValueError("--turns must be at least 1")
    with tempfile.TemporaryDirectory(prefix="kbmem-bench-chat-") as tmp:
        t0 = time.perf_counter()
        kb = init_kb(Path(tmp) / "kb")
        init_s = time.perf_counter() - t0
        commits: list[float] = []

        def on_event(event: AgentEvent) -> None:
            if isinstance(event, BatchCommitted):
                commits.append(event.duration_ms)

        t0 = time.perf_counter()
        chat = ChatSession(kb, kb.settings.data["default_tenant"], on_event=on_event)
        open_ms = (time.perf_counter() - t0) * 1000
        done = _ask_all(chat, commits, turns)
        t0 = time.perf_counter()
        chat.close()
        close_ms = (time.perf_counter() - t0) * 1000
        history = len(kb.log())
    latencies, after_batch = done.latencies, done.after_batch
    p50 = percentile(latencies, 50)
    return {
        "turns": len(latencies),
        "batch_turns": kb.settings.batch_turns,
        "turn_ms_p50": round(p50, 1),
        "turn_ms_p95": round(percentile(latencies, 95), 1),
        "turn_ms_max": round(max(latencies), 1),
        "turn_after_batch_ms_p50": round(percentile(after_batch, 50), 1) if after_batch else None,
        "turns_after_batch": len(after_batch),
        "first_turn_ms": round(done.first_ms, 1),
        "open_ms": round(open_ms, 1),
        "batch_commits": len(commits),
        "batch_commit_ms_p50": round(percentile(commits, 50), 1),
        "batch_commit_ms_max": round(max(commits, default=0.0), 1),
        "close_ms": round(close_ms, 1),
        "answered_with_citations": done.answered,
        "statuses": done.statuses,
        "commits_in_history": history,
        "init_s": round(init_s, 2),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "target_p50_ms": TARGET_P50_MS,
        "meets_target": p50 <= TARGET_P50_MS,
    }


def render(result: dict[str, Any]) -> str:
    verdict = "meets" if result["meets_target"] else "MISSES"
    return "\n".join(
        [
            f"offline chat: {result['turns']} turns (after one warm-up turn of "
            f"{result['first_turn_ms']:.0f} ms), batch every {result['batch_turns']}",
            f"turn latency     p50 {result['turn_ms_p50']:.1f} ms   p95 "
            f"{result['turn_ms_p95']:.1f} ms   max {result['turn_ms_max']:.1f} ms   "
            f"({verdict} the p50 target of {result['target_p50_ms']:.0f} ms)",
            f"batch commit     {result['batch_commits']} commits, p50 "
            f"{result['batch_commit_ms_p50']:.1f} ms, max {result['batch_commit_ms_max']:.1f} ms; "
            f"close {result['close_ms']:.1f} ms",
            "after a batch    the next turn first syncs the index to the commit: p50 "
            + (
                f"{result['turn_after_batch_ms_p50']:.1f} ms "
                f"({result['turns_after_batch']} such turns, counted in the latency above)"
                if result["turn_after_batch_ms_p50"] is not None
                else "n/a (no turn followed a batch)"
            ),
            f"answers          {result['answered_with_citations']} with citations; statuses "
            + ", ".join(f"{k} {v}" for k, v in sorted(result["statuses"].items())),
            f"machine          {result['cpus']} CPUs, load average {result['load_average_1m']}",
        ]
    )
