"""``kbmem bench soak`` end to end, short: a real ``kbmem serve`` process, the well-behaved
clients, every fault injected once (a user's commit and ``git gc``, slowloris, a flood of invalid
bodies, a huge session, ``kill -9`` and a restart). What must hold whatever the machine's speed
is asserted: nothing acknowledged is lost, no 5xx outside the kill, no stale search without a
notice. Latency and memory are figures, not assertions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbmem.bench import soak
from kbmem.cli import main

pytestmark = pytest.mark.slow


def test_a_short_soak_loses_nothing_and_says_when_it_is_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "soak", "--minutes", "1", "--big-turns", "500", "--dir", str(tmp_path / "s")]
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["sessions_acknowledged"] > 0 and result["turns_acknowledged"] > 0
    assert result["sessions_lost"] == 0 and result["turns_lost"] == 0
    assert result["fivexx_outside_kill"] == 0, result["fivexx_outside_kill_by_client"]
    assert result["searches"]["stale_without_notice"] == 0
    faults = result["requests"]["faults"]
    assert any(key.startswith("flood 4") for key in faults), faults  # refused, not parsed
    assert any(key.startswith("huge ") for key in faults), faults  # answered (or killed)
    assert "lost: 0 of" in soak.render(result)


def test_bench_soak_refuses_no_time(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "soak", "--minutes", "0"]) == 2
    assert "--minutes: must be more than 0" in capsys.readouterr().err
