"""``kbmem bench sync``: real replicas over a loopback git daemon, real LoCoMo sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.kbgit import LOCOMO

from kbmem.cli import main


@pytest.mark.slow
def test_bench_sync_reports_lag_throughput_and_bytes(tmp_path: Path, capsys) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "conv-26.json").write_bytes((LOCOMO / "conv-26.json").read_bytes())
    argv = ["bench", "sync", "--data", str(data), "--replicas", "2", "--sessions", "4"]
    assert main([*argv, "--probes", "2", "--interval", "0.5", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["replicas"] == 2 and result["sessions"] == 4 and result["lag_samples"] == 2
    assert 0 < result["synced_ms_p50"] <= result["lag_ms_p50"] <= result["lag_ms_p95"]
    assert result["sessions_per_s_sync_on"] > 0 and result["sessions_per_s_sync_off"] > 0
    assert result["remote_bytes_per_session"] > 0 and result["syncs"] >= 2


def test_bench_sync_refuses_bad_options(capsys) -> None:
    assert main(["bench", "sync", "--data", str(LOCOMO), "--replicas", "1"]) == 2
    assert "--replicas" in capsys.readouterr().err
