"""Results as JSON-ready dicts, the same for every front end (the HTTP API, the MCP server
and the CLI's ``--json``)."""

from __future__ import annotations

import functools
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from kbmem.store.pagestore import StoredPage
from kbmem.store.repository import CommitInfo


@functools.cache
def kbmem_version() -> str:
    """The installed package's version (read once: the HTTP server names it in every
    response, and a metadata lookup costs 0.3 ms)."""
    try:
        return version("kbmem")
    except PackageNotFoundError:
        return "unknown"


def ingest_result_dict(result: Any) -> dict[str, Any]:
    return {
        "tenantId": result.tenant_id,
        "sessionId": result.session_id,
        "status": result.status,
        "pages": result.page_ids,
        "commit": result.commit,
        "memo": result.memo,
        "memoNote": result.memo_note,
        "tenantCreated": result.tenant_created,
    }


def turn_summary_dict(summary: Any) -> dict[str, Any]:
    from kbmem.agent.provenance import iso

    return {
        "turn": summary.turn_id,
        "chat_id": summary.chat_id,
        "n": summary.turn,
        "question": summary.question,
        "status": summary.status,
        "started_at": iso(summary.started_at),
        "committed": summary.committed,
        "problem": summary.problem,
    }


def turn_reply_dict(record: Any) -> dict[str, Any]:
    """A finished chat turn as a caller needs it: the answer and what it cites."""
    return {
        "chat_id": record.chat_id,
        "turn": record.turn,
        "turn_id": record.turn_id,
        "status": record.status,
        "answer": record.answer,
        "citations": [c.citation() for c in record.context if c.cited],
        "error": record.error,
    }


def hit_dict(hit: Any) -> dict[str, Any]:
    """A search hit in camelCase, as a briefing's evidence is: its interval as evidence
    carries one (``turnIds``; the page id is the hit's own ``pageId``), and its kind. Its
    ``score`` is the retriever's own (BM25, cosine similarity, or reciprocal-rank fusion for
    hybrid), not a briefing's ``relevanceScore``, which fuses every search of a research."""
    interval = hit.interval
    return {
        **hit.to_dict(),
        "interval": {
            "path": interval.path,
            "start": interval.start,
            "end": interval.end,
            "commit": interval.commit,
            "blob": interval.blob,
            "kind": interval.kind,
            "turnIds": list(interval.turn_ids),
        },
    }


def commit_dict(commit: CommitInfo) -> dict[str, Any]:
    """A commit as every front end lists it: its full id, date, author, subject, the whole
    message (body and trailers, as ``git log`` prints it) and the page's path then."""
    return {
        "commit": commit.sha,
        "date": commit.date,
        "author": commit.author,
        "subject": commit.message.splitlines()[0] if commit.message else "",
        "message": commit.message,
        "path": commit.path,
    }


def page_dict(page_id: str, stored: StoredPage, header: Any, problem: str | None) -> dict[str, Any]:
    return {
        "id": page_id,
        "path": stored.path,
        "commit": stored.commit,
        "header": header,
        "text": stored.text,
        "problem": problem,
    }


def plain(value: Any) -> Any:
    """A page header as JSON-ready values (YAML dates become ISO text)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)
