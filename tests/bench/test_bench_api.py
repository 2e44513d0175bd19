"""``kbmem bench api`` end to end: a real server on a fresh example knowledge base, timed
against the same calls in process (figures, not targets: no timing is asserted here)."""

from __future__ import annotations

import json

import pytest

from kbmem.bench import api as bench_api
from kbmem.cli import main


def test_bench_api_times_both_sides_of_each_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "api", "--requests", "3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["requests"] == 3
    for kind in ("research", "search"):
        for side in ("inproc", "http"):
            p50, p95 = result[f"{kind}_{side}_ms_p50"], result[f"{kind}_{side}_ms_p95"]
            assert 0 < p50 <= p95
        # The p50s are given to 0.01 ms, the ratio is of the unrounded ones.
        ratio = result[f"{kind}_http_ms_p50"] / result[f"{kind}_inproc_ms_p50"]
        assert result[f"{kind}_http_over_inproc_p50"] == pytest.approx(ratio, rel=0.01)
        assert result[f"{kind}_http_over_inproc_pairs_p50"] > 0
    text = bench_api.render(result)
    assert "over HTTP" in text and "load average" in text


def test_bench_api_refuses_no_requests(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "api", "--requests", "0"]) == 2
    assert "--requests: must be at least 1" in capsys.readouterr().err
