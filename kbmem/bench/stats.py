"""Small statistics helpers for the benchmarks."""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def tree_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def add_dir_argument(parser: argparse.ArgumentParser) -> None:
    """``--dir``: where a benchmark builds its knowledge base (kept), instead of a temporary
    folder (removed)."""
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="build the knowledge base in this new folder and keep it (default: a temporary "
        "folder, removed at the end)",
    )
