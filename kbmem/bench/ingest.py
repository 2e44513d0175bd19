"""``kbmem bench ingest``: memorize every LoCoMo file into a fresh knowledge base (offline memo
engine, one commit per session) and report throughput and latency."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from kbmem.bench.locomo import ingest_locomo
from kbmem.bench.stats import add_dir_argument, percentile, tree_bytes
from kbmem.errors import ValidationError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dir_argument(parser)


def run(data_dir: Path, dir: Path | None = None) -> dict[str, Any]:
    if dir is not None and dir.exists() and any(dir.iterdir()):
        raise ValidationError(f"{dir} exists and is not empty", "--dir")
    root = dir or Path(tempfile.mkdtemp(prefix="kbmem-bench-")) / "kb"
    load_start = os.getloadavg()[0]
    try:
        ingest = ingest_locomo(data_dir, root)
        latencies = [r.seconds * 1000 for r in ingest.results]
        pages = sum(len(r.page_ids) for r in ingest.results)
        result: dict[str, Any] = {
            "sessions": len(ingest.results),
            "turns": ingest.turns,
            "pages": pages,
            "seconds": round(ingest.seconds, 3),
            "sessions_per_s": (
                round(len(ingest.results) / ingest.seconds, 2) if ingest.seconds else 0
            ),
            "latency_ms_p50": round(percentile(latencies, 50), 2),
            "latency_ms_p95": round(percentile(latencies, 95), 2),
            "repo_bytes": tree_bytes(ingest.kb.root / ".git"),
            # Other work on the machine slows every figure above: say how busy it was.
            "machine": {
                "cpus": os.cpu_count(),
                "load_avg_1m_start": round(load_start, 2),
                "load_avg_1m_end": round(os.getloadavg()[0], 2),
            },
        }
        if dir is not None:
            result["kb"] = str(ingest.kb.root)
        return result
    finally:
        if dir is None:
            shutil.rmtree(root.parent, ignore_errors=True)


def render(result: dict[str, Any]) -> str:
    return "\n".join(f"{key:>15}: {value}" for key, value in result.items())
