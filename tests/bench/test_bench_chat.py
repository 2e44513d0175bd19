"""``kbmem bench chat`` end to end on a fresh example knowledge base: real offline turns,
real batch commits, and the turn after a batch (which brings the index up to it) apart."""

from __future__ import annotations

import json
from pathlib import Path

from kbmem.bench import chat as bench_chat
from kbmem.cli import main
from kbmem.memorize.template import init_kb


def test_bench_chat_times_turns_and_batches(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert main(["bench", "chat", "--turns", "6", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    # One warm-up turn, then six timed ones, all answered from memory with citations.
    assert result["turns"] == 6 and result["statuses"] == {"complete": 6}
    assert result["answered_with_citations"] == 6
    # Seven turns, batches of five: one batch commit during the chat, one when it closes,
    # each a single commit on top of the example's history.
    assert result["batch_turns"] == 5 and result["batch_commits"] == 2
    template_commits = len(init_kb(tmp_path / "kb").log())
    assert result["commits_in_history"] == template_commits + 2
    # The sixth turn follows the batch: it is reported apart as well as in the latency.
    assert result["turns_after_batch"] == 1
    assert 0 < result["turn_after_batch_ms_p50"] <= result["turn_ms_max"]
    assert 0 < result["turn_ms_p50"] <= result["turn_ms_p95"] <= result["turn_ms_max"]
    assert result["meets_target"] == (result["turn_ms_p50"] <= 300)
    text = bench_chat.render(result)
    assert "after a batch" in text and "load average" in text
