"""``kbmem bench tui`` end to end: ``kbmem chat`` starts in a subprocess on a fresh example
knowledge base, paints, answers the benchmark question offline, and reports its timings."""

from __future__ import annotations

import json

from kbmem.bench import tui as bench_tui
from kbmem.cli import main


def test_bench_tui_times_a_real_start(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["bench", "tui", "--runs", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    (run,) = result["runs"]
    # Every mark was reached, in the order a start goes through them.
    assert 0 < run["first_paint_s"] < run["answer_s"] <= run["process_exit_s"]
    # The first screen paints before the embedding model has loaded (it loads in a worker).
    assert run["first_paint_s"] < run["embedder_ready_s"] < run["answer_s"] + 1e-3
    # The answer is the right one, from the example's history.
    assert run["answer_ok"], run["answer_first_line"]
    assert result["first_paint_s"] == run["first_paint_s"]
    assert set(result["meets_targets"]) == {"first_paint_s", "first_answer_s"}
    text = bench_tui.render(result)
    assert "first paint" in text and "first offline answer" in text
