"""``kbmem search`` and ``kbmem reindex`` as a user runs them, on a real knowledge base with two
tenants: hits carry what a citation needs, query syntax is plain text, bad ``k`` and empty
queries are clear errors, a tenant never sees another's text, and reindex reports each sync."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from helpers.kbgit import git, head, run_on_terminal, summit_session, write_json

from kbmem.cli import main
from kbmem.index import embedder
from kbmem.memorize.template import init_kb

ACME_TEXTS = [
    "Ann: the harbour crane inspection moved to Thursday at dawn.",
    "Bob: the inspector found a cracked hydraulic hose on the crane boom.",
    "Ann: Dana approved the repair budget of 14,500 euros on Monday.",
]
GLOBEX_TEXTS = [
    "Gloria: the ticket server went down on Sunday during the storm.",
    "Eve: restart it from the admin console, then tell the auditor.",
]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two tenants, ingested and indexed once (copy before writing)."""
    embedder.preload()
    root = tmp_path_factory.mktemp("search") / "kb"
    init_kb(root, with_history=False)
    files = tmp_path_factory.mktemp("sessions")
    acme = write_json(files / "a.json", summit_session("crane", ACME_TEXTS, tenant="acme"))
    globex = write_json(files / "g.json", summit_session("tickets", GLOBEX_TEXTS, tenant="globex"))
    assert main(["--kb", str(root), "ingest", str(acme), str(globex)]) == 0
    assert main(["--kb", str(root), "reindex", "--all-tenants"]) == 0
    return root


@pytest.fixture
def kb(master: Path, tmp_path: Path) -> Path:
    target = tmp_path / "kb"
    shutil.copytree(master, target, symlinks=True)
    return target


@pytest.mark.parametrize("tool", ["bm25", "dense", "hybrid"])
def test_search_prints_hits_with_their_citation(kb: Path, capsys, tool: str) -> None:
    args = ["--kb", str(kb), "--tenant", "acme", "search", "crane hose repair", "--tool", tool]
    code, out, err = run(capsys, *args, "-k", "2", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["query"] == "crane hose repair" and result["tool"] == tool
    assert len(result["hits"]) == 2
    commit = head(kb)
    for hit in result["hits"]:
        assert hit["tenantId"] == "acme" and hit["sessionId"] == "crane"
        assert hit["pageId"] == "crane/1" and hit["retrieverType"] == tool
        (text,) = [t for t in ACME_TEXTS if hit["excerpt"].endswith(t)]  # "speaker: text"
        assert hit["score"] > 0
        interval = hit["interval"]
        assert interval["path"] == "tenants/acme/pages/crane/1.md"
        assert interval["turnIds"] and "page_id" not in interval  # as over HTTP and MCP
        assert interval["commit"] == commit and 1 <= interval["start"] <= interval["end"]
        lines = git(kb, "show", f"{commit}:{interval['path']}").split("\n")
        assert text in "\n".join(lines[interval["start"] - 1 : interval["end"]])
    code, out, _err = run(capsys, *args, "-k", "1")
    assert code == 0
    assert out.startswith(" 1. [crane/1:L") and out.count("\n") == 1


@pytest.mark.parametrize("query", ["AND", "title:x", "*", '"unbalanced', "OR NOT (", "the of"])
@pytest.mark.parametrize("tool", ["bm25", "hybrid"])
def test_query_syntax_is_plain_text(kb: Path, capsys, query: str, tool: str) -> None:
    code, out, err = run(capsys, "--kb", str(kb), "search", query, "--tool", tool, "--json")
    assert code == 0, err
    assert json.loads(out)["hits"] == []  # none of these words is in the knowledge base
    code, out, err = run(capsys, "--kb", str(kb), "--tenant", "acme", "search", f"crane {query}")
    assert code == 0 and "crane" in out, err


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["", "-k", "3"], "query: must be non-empty text"),
        (["  \t ", "-k", "3"], "query: must be non-empty text"),
        (["crane", "-k", "0"], "k: must be a whole number from 1 to 1000, got 0"),
        (["crane", "-k", "-5"], "k: must be a whole number from 1 to 1000, got -5"),
        (["crane", "-k", str(10**9)], "k: must be a whole number from 1 to 1000, got 1000000000"),
    ],
)
def test_bad_searches_are_clear_errors(kb: Path, capsys, args: list[str], field: str) -> None:
    for tool in ("bm25", "dense", "hybrid"):
        code, out, err = run(capsys, "--kb", str(kb), "search", *args, "--tool", tool)
        assert code == 2 and out == "" and err == f"kbmem: error: {field}\n", err


def test_a_100_kb_query_is_answered(kb: Path, capsys) -> None:
    query = "crane inspection " * 6000
    assert len(query) > 100_000
    for tool in ("bm25", "dense", "hybrid"):
        args = ["--kb", str(kb), "--tenant", "acme", "search", query, "--tool", tool, "-k", "1"]
        code, out, err = run(capsys, *args)
        assert code == 0 and "crane" in out.lower(), err


def test_a_tenant_never_sees_another_tenants_text(kb: Path, capsys) -> None:
    for tool in ("bm25", "dense", "hybrid"):
        args = ["--kb", str(kb), "--tenant", "globex", "search", "crane inspection hose"]
        code, out, _err = run(capsys, *args, "--tool", tool, "-k", "1000", "--json")
        assert code == 0
        hits = json.loads(out)["hits"]
        assert all(h["tenantId"] == "globex" for h in hits)
        assert all(any(h["excerpt"].endswith(t) for t in GLOBEX_TEXTS) for h in hits)


def test_reindex_reports_each_kind_of_sync(kb: Path, capsys) -> None:
    code, out, _err = run(capsys, "--kb", str(kb), "--tenant", "acme", "reindex")
    assert code == 0 and out.startswith("acme: none sync to ") and "(up to date)" in out
    more = write_json(
        kb.parent / "more.json", summit_session("storm", ["Gale warning."], tenant="acme")
    )
    assert run(capsys, "--kb", str(kb), "ingest", str(more))[0] == 0
    code, out, _err = run(capsys, "--kb", str(kb), "--tenant", "acme", "reindex")
    assert code == 0 and "acme: incremental sync to " in out and "1 page(s), +1 -0" in out
    code, out, _err = run(capsys, "--kb", str(kb), "--tenant", "acme", "reindex", "--full")
    assert code == 0 and "acme: full sync to " in out and "(asked for a full rebuild)" in out
    assert "+4 -0 intervals" in out


def test_reindex_all_tenants_skips_a_folder_that_is_no_tenant(kb: Path, capsys, caplog) -> None:
    (kb / "tenants" / "bad name").mkdir()
    (kb / "tenants" / "bad name" / "x.md").write_text("# By hand\n")
    (kb / "tenants" / "README.md").write_text("# Tenants\n")
    git(kb, "add", "tenants")
    git(kb, "commit", "-q", "-m", "Add files by hand")
    code, out, err = run(capsys, "--kb", str(kb), "reindex", "--all-tenants")
    assert code == 0, err
    assert [line.split(":")[0] for line in out.splitlines()] == ["acme", "globex"]
    assert "skipping tenants/bad name: tenantId: 'bad name' is not a safe id" in caplog.text


def test_reindex_shows_a_progress_bar_on_a_terminal(kb: Path) -> None:
    command = [sys.executable, "-m", "kbmem.cli", "--kb", str(kb), "--tenant", "acme"]
    code, out, shown = run_on_terminal([*command, "reindex", "--full"], timeout=300)
    assert code == 0 and out.startswith("acme: full sync")
    assert b"index acme:" in shown and b"3/3" in shown
