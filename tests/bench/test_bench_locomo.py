"""``kbmem bench locomo`` end to end on three LoCoMo sessions and the questions they answer:
the JSON keys the issue names, per-question details that add up to the figures, a kept
knowledge base reused by the next run on the same files and refused for other files, and no
temporary knowledge base left behind."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from helpers.kbgit import LOCOMO, commit_count, head

from kbmem.cli import main

SESSIONS = 3
FIGURES = {
    "questions",
    "page_coverage",
    "interval_coverage",
    "mean_context_tokens",
    "mean_reflection_steps",
    "latency_ms_p50",
    "latency_ms_p95",
    "baselines",
}


def _slice(folder: Path) -> tuple[Path, int]:
    """conv-26's first sessions, with the questions whose evidence lies in them (category 5
    among them: the benchmark must leave those out)."""
    data = json.loads((LOCOMO / "conv-26.json").read_text())
    part = {"speaker_a": data["speaker_a"], "speaker_b": data["speaker_b"]}
    for n in range(1, SESSIONS + 1):
        part[f"session_{n}"] = data[f"session_{n}"]
        part[f"session_{n}_date_time"] = data[f"session_{n}_date_time"]
    inside = re.compile(rf"D[1-{SESSIONS}]:\d+$")
    part["qa"] = [
        q for q in data["qa"] if q.get("evidence") and all(inside.match(e) for e in q["evidence"])
    ]
    assert any(q.get("category") == 5 for q in part["qa"])
    folder.mkdir(exist_ok=True)
    (folder / "conv-26.json").write_text(json.dumps(part))
    return folder, sum(q.get("category") != 5 for q in part["qa"])


def _temp_kbs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("kbmem-bench-*")}


def _bench(capsys, *args: str) -> dict:
    assert main(["bench", "locomo", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_bench_locomo_reports_the_figures_and_each_question(tmp_path: Path, capsys) -> None:
    data, asked = _slice(tmp_path / "locomo")
    details = tmp_path / "details.jsonl"
    before = _temp_kbs()
    result = _bench(capsys, "--data", str(data), "--details", str(details))
    assert _temp_kbs() <= before, "the temporary knowledge base is removed"

    assert result["engine"] == "offline"
    assert set(result) == FIGURES | {"engine", "categories"}
    assert result["questions"] == asked
    assert set(result["categories"]) <= {"multi-hop", "temporal", "open-domain", "single-hop"}
    assert sum(c["questions"] for c in result["categories"].values()) == asked
    for block in [result, *result["categories"].values()]:
        assert set(block) - {"engine", "categories"} == FIGURES
        assert set(block["baselines"]) == {"bm25", "hybrid"}
        for share in ("page_coverage", "interval_coverage"):
            assert 0 <= block[share] <= 1
            for name in ("bm25", "hybrid"):
                assert 0 <= block["baselines"][name][share] <= 1
        assert 0 < block["mean_context_tokens"] <= 1500
        assert 0 < block["latency_ms_p50"] <= block["latency_ms_p95"]
    # Three sessions and eight pages: every evidence session fits.
    assert result["page_coverage"] == 1.0

    rows = [json.loads(line) for line in details.read_text().splitlines()]
    assert len(rows) == asked
    for row in rows:
        used = set(row["sessionsUsed"])
        assert row["missingSessions"] == sorted(set(row["evidenceSessions"]) - used)
        assert row["pageCovered"] == (not row["missingSessions"])
        assert row["intervalCovered"] == (not row["missingTurns"])
        assert set(row["missingTurns"]) <= set(row["evidence"])
        assert row["contextTokens"] <= 1500 and row["latencyMs"] > 0
    for key, name in (("pageCovered", "page_coverage"), ("intervalCovered", "interval_coverage")):
        assert round(sum(r[key] for r in rows) / asked, 4) == result[name]
    assert round(sum(r["contextTokens"] for r in rows) / asked, 1) == result["mean_context_tokens"]


def test_a_kept_knowledge_base_is_reused_for_the_same_files_only(tmp_path: Path, capsys) -> None:
    data, _asked = _slice(tmp_path / "locomo")
    keep = tmp_path / "kept"
    first = _bench(capsys, "--data", str(data), "--dir", str(keep), "--limit", "4")
    kb = keep / "kb"
    built = (head(kb), commit_count(kb))
    assert built[1] == 1 + SESSIONS  # the settings, then one commit per session

    again = _bench(capsys, "--data", str(data), "--dir", str(keep), "--limit", "4")
    assert (head(kb), commit_count(kb)) == built, "reused, not ingested again"
    for name in ("page_coverage", "interval_coverage", "mean_context_tokens"):
        assert again[name] == first[name]
    assert main(["bench", "retrieval", "--data", str(data), "--dir", str(keep)]) == 0
    assert "ingest reused" in capsys.readouterr().out

    # Other files (a session more) must not be answered from the old pages.
    source = json.loads((data / "conv-26.json").read_text())
    full = json.loads((LOCOMO / "conv-26.json").read_text())
    source["session_4"] = full["session_4"]
    source["session_4_date_time"] = full["session_4_date_time"]
    (data / "conv-26.json").write_text(json.dumps(source))
    assert main(["bench", "locomo", "--data", str(data), "--dir", str(keep)]) == 2
    err = capsys.readouterr().err
    assert "--dir" in err and "other LoCoMo files" in err
    assert (head(kb), commit_count(kb)) == built

    # A folder that no run kept (here, one with a file in it) is not built over.
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    (stranger / "notes.txt").write_text("mine")
    assert main(["bench", "locomo", "--data", str(data), "--dir", str(stranger)]) == 2
    assert "not a knowledge base kept by an earlier run" in capsys.readouterr().err
    assert [p.name for p in stranger.iterdir()] == ["notes.txt"]


def test_details_must_go_to_a_file(tmp_path: Path, capsys) -> None:
    data, _ = _slice(tmp_path / "locomo")
    for bad in (tmp_path, tmp_path / "missing" / "details.jsonl"):
        assert main(["bench", "locomo", "--data", str(data), "--details", str(bad)]) == 2
        assert "--details" in capsys.readouterr().err


def test_the_llm_engine_without_a_model_is_refused_before_ingesting(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.delenv("KBMEM_MODEL", raising=False)
    monkeypatch.delenv("KBMEM_LLM__MODEL", raising=False)
    data, _ = _slice(tmp_path / "locomo")
    keep = tmp_path / "kept"
    args = ["--data", str(data), "--engine", "llm", "--dir", str(keep)]
    assert main(["bench", "locomo", *args]) == 2
    assert "--engine llm needs a model" in capsys.readouterr().err
    assert not keep.exists(), "refused before anything was built"


def test_files_that_are_not_locomo_conversations_are_refused(tmp_path: Path, capsys) -> None:
    before = _temp_kbs()
    data, _ = _slice(tmp_path / "locomo")
    conversation = json.loads((data / "conv-26.json").read_text())
    broken = {
        "list.json": ([1, 2], "is not a LoCoMo conversation"),
        "truncated.json": ('{"session_1": [', "malformed JSON at line 1"),
        "bad-session.json": ({**conversation, "session_2": 5}, "session_2: must be a list"),
        "no-question.json": ({**conversation, "qa": [{"answer": "x"}]}, "qa[0]: must be an"),
        "bad-category.json": (
            {**conversation, "qa": [{"question": "q?", "category": "x"}]},
            "qa[0]: category must be a number",
        ),
    }
    for name, (content, message) in broken.items():
        folder = tmp_path / name.removesuffix(".json")
        folder.mkdir()
        text = content if isinstance(content, str) else json.dumps(content)
        (folder / name).write_text(text)
        for bench in ("locomo", "retrieval"):
            assert main(["bench", bench, "--data", str(folder)]) == 2, (name, bench)
            err = capsys.readouterr().err
            assert name in err and message in err, err
    assert _temp_kbs() <= before
