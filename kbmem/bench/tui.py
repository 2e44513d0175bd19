"""``kbmem bench tui``: how long the terminal UI takes, on the example knowledge base, from
start to its first painted screen and to its first offline answer (embedding model load
included). Targets: first paint ≤ 1.5 s, first answer ≤ 5 s.

The core never imports Textual, so each run is ``kbmem chat`` in a subprocess, with
``KBMEM_TUI_BENCH`` set (see ``tui/bench.py``): headless at 120×40, it asks one question as
soon as the chat screen has painted, writes wall-clock timing marks to a file and exits.
Each run is a fresh process (the model loads every time). The first run meets a knowledge
base fresh from ``kbmem init`` (no index yet: the TUI builds it); later runs find the index
built, as every start after the first does."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

from kbmem.memorize.template import init_kb

QUESTION = "Which company was the first pilot customer for Ferrylog?"
EXPECTED = "Skerrick Island Ferries"
TARGETS = {"first_paint_s": 1.5, "first_answer_s": 5.0}
MARKS = ("first_paint", "embedder_ready", "index_ready", "answer")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--runs",
        type=int,
        default=3,
        help="TUI starts to time (the first on a fresh knowledge base; default 3)",
    )


def _one_run(kb_root: Path, out: Path, timeout: float) -> dict[str, Any]:
    t0 = time.time()
    env = {
        **os.environ,
        "KBMEM_TUI_BENCH": str(out),
        "KBMEM_TUI_BENCH_QUESTION": QUESTION,
        "KBMEM_TUI_T0": repr(t0),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "kbmem.cli", "--kb", str(kb_root), "chat"],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    wall = time.time() - t0
    if not out.exists():
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-5:]
        raise RuntimeError(f"the TUI exited with {proc.returncode}: {' | '.join(tail)}")
    data = json.loads(out.read_text())
    out.unlink()
    marks = data["marks"]
    run: dict[str, Any] = {
        f"{name}_s": round(marks[name] - t0, 3) for name in MARKS if name in marks
    }
    run["process_exit_s"] = round(wall, 3)
    run["answer_ok"] = EXPECTED in data.get("answer", "")
    run["answer_first_line"] = next(
        (line for line in data.get("answer", "").splitlines() if line.strip()), ""
    )[:200]
    return run


def run(runs: int = 3, timeout: float = 600.0) -> dict[str, Any]:
    if runs < 1:
        raise ValueError("--runs must be at least 1")
    results = []
    with tempfile.TemporaryDirectory(prefix="kbmem-bench-tui-") as tmp:
        kb = init_kb(Path(tmp) / "kb")
        out = Path(tmp) / "marks.json"
        for n in range(runs):
            result = _one_run(kb.root, out, timeout)
            result["run"] = n + 1
            result["index"] = "built by this run" if n == 0 else "already built"
            results.append(result)
    warm = results[1:] or results
    report: dict[str, Any] = {
        "question": QUESTION,
        "targets": TARGETS,
        "runs": results,
        "first_paint_s": max(r.get("first_paint_s", float("inf")) for r in results),
        "first_answer_s": round(median(r.get("answer_s", float("inf")) for r in warm), 3),
        "first_answer_cold_s": results[0].get("answer_s"),
        "all_answers_ok": all(r["answer_ok"] for r in results),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    report["meets_targets"] = {name: report[name] <= limit for name, limit in TARGETS.items()}
    return report


def render(result: dict[str, Any]) -> str:
    lines = [
        f"question: {result['question']}",
        f"{'run':>3}  {'index':<18} {'paint s':>8} {'model s':>8} {'index s':>8} "
        f"{'answer s':>9}  answer",
    ]
    for r in result["runs"]:
        lines.append(
            f"{r['run']:>3}  {r['index']:<18} {r.get('first_paint_s', float('nan')):>8.2f} "
            f"{r.get('embedder_ready_s', float('nan')):>8.2f} "
            f"{r.get('index_ready_s', float('nan')):>8.2f} {r.get('answer_s', float('nan')):>9.2f}"
            f"  {'ok' if r['answer_ok'] else 'WRONG'}: {r['answer_first_line'][:60]}"
        )
    t, ok = result["targets"], result["meets_targets"]
    lines.append(
        f"first paint (worst run): {result['first_paint_s']:.2f} s "
        f"(target ≤ {t['first_paint_s']} s: {'met' if ok['first_paint_s'] else 'MISSED'})"
    )
    lines.append(
        f"first offline answer (index built, median): {result['first_answer_s']:.2f} s "
        f"(target ≤ {t['first_answer_s']} s: {'met' if ok['first_answer_s'] else 'MISSED'}); "
        f"fresh knowledge base: {result['first_answer_cold_s']:.2f} s"
    )
    lines.append(f"machine: {result['cpus']} CPUs, load average {result['load_average_1m']}")
    return "\n".join(lines)
