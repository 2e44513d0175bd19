"""``kbmem bench ingest``: memorize every LoCoMo file into a fresh knowledge base (offline memo
engine, one commit per session) and report throughput and latency."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .locomo import ingest_locomo
from .stats import percentile, tree_bytes


def run(data_dir: Path) -> dict[str, Any]:
    ingest = ingest_locomo(data_dir)
    latencies = [r.seconds * 1000 for r in ingest.results]
    pages = sum(len(r.page_ids) for r in ingest.results)
    return {
        "sessions": len(ingest.results),
        "turns": ingest.turns,
        "pages": pages,
        "seconds": round(ingest.seconds, 3),
        "sessions_per_s": round(len(ingest.results) / ingest.seconds, 2) if ingest.seconds else 0,
        "latency_ms_p50": round(percentile(latencies, 50), 2),
        "latency_ms_p95": round(percentile(latencies, 95), 2),
        "repo_bytes": tree_bytes(ingest.kb.root / ".git"),
        "kb": str(ingest.kb.root),
    }


def render(result: dict[str, Any]) -> str:
    return "\n".join(f"{key:>15}: {value}" for key, value in result.items())
