"""``kbmem bench ingest`` and ``kbmem bench scale`` end to end on small inputs: every figure
the issues ask for is reported, the counts agree with what was built, and a temporary
knowledge base is removed unless ``--dir`` asks to keep it."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from helpers.kbgit import LOCOMO, commit_count, status

from kbmem.bench import scale
from kbmem.cli import main
from kbmem.index.tenant import TenantIndex
from kbmem.store.repository import KnowledgeBase


def _locomo_slice(folder: Path, sessions: int) -> Path:
    data = json.loads((LOCOMO / "conv-26.json").read_text())
    part = {"speaker_a": data["speaker_a"], "speaker_b": data["speaker_b"], "qa": []}
    for n in range(1, sessions + 1):
        part[f"session_{n}"] = data[f"session_{n}"]
        part[f"session_{n}_date_time"] = data[f"session_{n}_date_time"]
    folder.mkdir()
    (folder / "conv-26.json").write_text(json.dumps(part))
    return folder


def _temp_kbs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("kbmem-bench-*")}


def test_bench_ingest_reports_every_figure_and_cleans_up(tmp_path: Path, capsys) -> None:
    data = _locomo_slice(tmp_path / "locomo", 3)
    before = _temp_kbs()
    assert main(["bench", "ingest", "--data", str(data), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {"sessions", "turns", "pages", "seconds", "sessions_per_s"} <= set(result)
    assert {"latency_ms_p50", "latency_ms_p95", "repo_bytes", "machine"} <= set(result)
    source = json.loads((data / "conv-26.json").read_text())
    assert result["sessions"] == 3
    assert result["turns"] == sum(len(source[f"session_{n}"]) for n in (1, 2, 3))
    assert result["pages"] >= 3 and result["repo_bytes"] > 0
    assert result["latency_ms_p50"] <= result["latency_ms_p95"]
    # Both are rounded (seconds to the millisecond): compare at that precision.
    assert result["seconds"] == pytest.approx(3 / result["sessions_per_s"], abs=0.001)
    assert "kb" not in result and _temp_kbs() <= before  # nothing left behind

    kept = tmp_path / "kept"
    assert main(["bench", "ingest", "--data", str(data), "--dir", str(kept)]) == 0
    out = capsys.readouterr().out
    assert "sessions_per_s: " in out and f"kb: {kept.resolve()}" in out
    assert commit_count(kept) == 1 + 3  # the settings, then one commit per session
    assert status(kept) == ""


def test_bench_scale_reports_build_sync_queries_memory_and_size(tmp_path: Path, capsys) -> None:
    kept = tmp_path / "scale-kb"
    args = ["--pages", "40", "--queries", "100", "--dir", str(kept), "--json"]
    assert main(["bench", "scale", *args]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["pages"] == 40
    assert result["full_build_s_by_pages"].keys() == {"40"}
    assert result["sync_one_page_s"].keys() == result["sync_one_page_max_s"].keys() == {"40"}
    assert result["intervals"] == result["intervals_by_pages"]["40"] > 40
    assert set(result["query_ms"]) == {"bm25", "dense", "hybrid"}
    for row in result["query_ms"].values():
        assert row["queries"] == 100 and 0 < row["p50"] <= row["p95"]
        assert row["no_hits"] < 100
    assert result["peak_rss_mb"] > 0 and result["index_bytes"] > 0
    per_interval = result["index_bytes"] / result["intervals"]  # the last syncs add a few
    assert 0.8 * per_interval < result["index_bytes_per_interval"] <= per_interval
    assert {"cpus", "load_avg_1m_start", "load_avg_1m_end"} <= set(result["machine"])
    # The index it leaves reflects HEAD: the 40 pages, those added one at a time to time the
    # syncs, and the one added before the first query.
    kb = KnowledgeBase(kept)
    index = TenantIndex(kb, scale.TENANT)
    assert index.current().commit == kb.head()
    indexed = {hit.page_id for hit in index.all_intervals()}
    assert len(indexed) == 40 + scale.SYNC_REPEATS + 1
    text = scale.render(result)
    assert "one-page sync" in text and "hybrid" in text and "bytes per interval" in text
    targets = scale._targets(
        {**result, "pages": 10_000, "sync_one_page_s": {"1000": 0.2, "10000": 0.3}}
    )
    assert len(targets) == 6 and all(t.endswith((" met", " MISSED")) for t in targets)


def test_bench_scale_projects_its_two_sizes_to_100000_pages_and_says_so() -> None:
    """The 100,000-page figures are a projection: per-interval costs as measured at the
    larger size, and what grew from the smaller size to it growing on in proportion."""
    stage = scale._Stage(
        sync_one={"1000": 0.1, "10000": 0.13},
        intervals={"1000": 6_000, "10000": 60_000},
        peak_rss_mb={"1000": 600.0, "10000": 900.0},
    )
    projected = scale._projection(stage, 10_000, 1_000, rate=150.0, per_interval=8_000.0)
    assert projected is not None
    assert projected["pages"] == 100_000 and projected["intervals"] == 600_000
    assert projected["index_bytes"] == 4_800_000_000
    assert projected["full_build_s"] == 4_000.0
    # 594,000 more intervals than at 1,000 pages, 11 times the 54,000 added up to 10,000.
    assert projected["sync_one_page_s"] == pytest.approx(0.1 + 0.03 * 11)
    assert projected["peak_rss_mb"] == pytest.approx(600.0 + 300.0 * 11)
    assert "not measured" in projected["basis"]
    assert scale._projection(stage, 1_000, 1_000, rate=150.0, per_interval=8_000.0) is None
    # A sync measured faster at the larger size is not projected faster still.
    stage.sync_one["10000"] = 0.09
    faster = scale._projection(stage, 10_000, 1_000, rate=150.0, per_interval=8_000.0)
    assert faster is not None and faster["sync_one_page_s"] == 0.09
