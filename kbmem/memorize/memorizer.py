"""The memorizer (GAM's offline half): a session becomes a memo, a memory update and pages.

Pages keep the session verbatim, split at turn boundaries by a token budget; each carries a
decorated header with the context of the sessions before it. ``MEMORY.md`` holds one memo line
per session. One commit per session, with ``Kbmem-Session`` and ``Kbmem-Tenant`` trailers.

The memo is written before the write lock is taken (a model may take minutes over it, and
every other writer would wait); under the lock it is used if the memory it was written in
view of is still the tenant's, and written again if not (outside the lock, by a model).
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

import yaml

from kbmem.errors import NotFound, ValidationError
from kbmem.ids import page_id_for, session_page_id
from kbmem.memorize.memo import Memo, MemoEngine, OfflineMemo, one_line, participants
from kbmem.memorize.sessions import Session
from kbmem.store.pages import Loader, Page, Turn, dump_yaml, render_page, render_turn, render_turns
from kbmem.store.pagestore import tenant_exists, tenant_prefix
from kbmem.store.repository import KnowledgeBase
from kbmem.telemetry import record_ingest
from kbmem.textutil import count_tokens

log = logging.getLogger("kbmem")

MEMORY_LINE = re.compile(r"^- \[(?P<date>[^\]]*)\] (?P<sid>\S+) — (?P<memo>.*)$")
# Tuning: earlier sessions of the tenant a page header is written in view of, and memos written
# for one commit while other sessions keep changing the memory (see memorize_writes).
HEADER_CONTEXT_SESSIONS = 2
MEMO_ATTEMPTS = 3


@dataclass
class IngestResult:
    tenant_id: str
    session_id: str
    status: str  # created | updated | unchanged
    page_ids: list[str] = field(default_factory=list)
    commit: str | None = None
    memo: str = ""
    memo_note: str = ""
    seconds: float = 0.0
    tenant_created: bool = False  # the tenant held nothing before this session's commit


def split_turns(turns: list[Turn], budget: int) -> list[list[Turn]]:
    """Group turns into pages of at most ``budget`` tokens; a turn is never split, so a turn
    larger than the budget gets a page to itself."""
    pages: list[list[Turn]] = [[]]
    used = 0
    for turn in turns:
        cost = count_tokens(render_turn(turn))
        if pages[-1] and used + cost > budget:
            pages.append([])
            used = 0
        pages[-1].append(turn)
        used += cost
    return pages


def read_memory(kb: KnowledgeBase, tenant: str, rev: str = "HEAD") -> list[tuple[str, str, str]]:
    """``(date, session id, memo)`` for every memo line in the tenant's ``MEMORY.md`` (as
    committed in ``rev``)."""
    try:
        text = kb.read_bytes(tenant_prefix(tenant) + "MEMORY.md", rev).decode("utf-8")
    except NotFound:
        return []
    return [
        (m["date"], m["sid"], m["memo"])
        for line in text.splitlines()
        if (m := MEMORY_LINE.match(line))
    ]


def render_memory(tenant: str, entries: list[tuple[str, str, str]]) -> str:
    lines = [
        f"# Memory of tenant {tenant}",
        "",
        "One memo per session, oldest first. Written by the kbmem memorizer; the pages "
        "under `pages/` hold every session verbatim.",
        "",
    ]
    lines += [f"- [{d}] {sid} — {memo}" for d, sid, memo in sorted(entries)]
    return "\n".join(lines) + "\n"


def header_text(
    session: Session, seq: int, total: int, turns: list[Turn], before: list[tuple[str, str, str]]
) -> str:
    """GAM's page header: where this page sits and what came before it."""
    who = ", ".join(participants(session))
    title = f"'{session.title}'" if session.title else session.session_id
    text = (
        f"Session {title} of {session.created_at[:10] or 'unknown date'} with {who}; "
        f"page {seq} of {total}, turns {turns[0].id} to {turns[-1].id}."
    )
    if before:
        text += " Earlier: " + " | ".join(f"{sid}: {memo}" for _d, sid, memo in before)
    return text


def _session_record(
    session: Session,
    memo: Memo,
    page_ids: list[str],
    version: int,
    turn_pages: dict[str, str],
    digest: str,
) -> dict[str, Any]:
    turns = []
    for t in session.turns:
        entry: dict[str, Any] = {"id": t.id, "role": t.role, "page": turn_pages[t.id]}
        if t.metadata:
            entry["metadata"] = t.metadata
        turns.append(entry)
    return {
        "session_id": session.session_id,
        "tenant_id": session.tenant_id,
        "agent_id": session.agent_id,
        "title": session.title,
        "created_at": session.created_at,
        "classification": session.classification,
        "policy_tags": session.policy_tags,
        "tags": session.tags,
        "origin_run_id": session.origin_run_id,
        "request_intent": session.request_intent,
        "metadata": session.metadata,
        "memo": memo.text,
        "memo_engine": memo.engine,
        "memo_version": version,
        "content_sha256": digest,
        "pages": page_ids,
        "turns": turns,
    }


def check_session_size(kb: KnowledgeBase, session: Session) -> None:
    """Refuse a session over the documented limit (``memorizer.max_session_bytes``) rather
    than storing part of it; callers ingesting many sessions check them all first."""
    limit = int(kb.settings.section("memorizer")["max_session_bytes"])
    if session.size_bytes > limit:
        raise ValidationError(
            f"session {session.session_id!r} holds {session.size_bytes} bytes of text; the "
            f"limit is {limit} (memorizer.max_session_bytes)",
            "turns",
        )


def ingest_session(
    kb: KnowledgeBase, session: Session, engine: MemoEngine | None = None, date: str | None = None
) -> IngestResult:
    """Memorize ``session`` into the knowledge base: a no-op if this exact session is already
    committed; new versions of the same pages if its content changed. The memo is written
    before the write lock is taken (see :func:`write_memo`)."""
    started, started_ns = time.perf_counter(), time.time_ns()
    memo = write_memo(kb, session, engine)
    while True:
        try:
            result = _commit_session(kb, session, memo, date)
            break
        except MemoOutdated:
            memo = write_memo(kb, session, engine, attempt=memo.attempt + 1)
    result.seconds = time.perf_counter() - started
    record_ingest(result, started_ns)
    return result


def _commit_session(
    kb: KnowledgeBase, session: Session, memo: SessionMemo, date: str | None
) -> IngestResult:
    with kb.write_lock():
        # Read under the lock: of two sessions that start a tenant at once, one created it.
        new_tenant = not tenant_exists(kb, session.tenant_id)
        writes, result = memorize_writes(kb, session, memo)
        if result.status != "unchanged":
            sid, title = session.session_id, session.title
            subject = f"Memorize session {sid}" + (f": {title}" if title else "")
            result.commit = kb.commit_files(
                writes,
                subject[:120],
                {"Kbmem-Session": sid, "Kbmem-Tenant": session.tenant_id},
                date=date,
            )
            result.tenant_created = new_tenant and result.commit is not None
    return result


class MemoOutdated(Exception):
    """The memory a memo was written in view of is no longer the tenant's (another session
    was memorized meanwhile): write the memo again, outside the write lock."""


@dataclass
class SessionMemo:
    """A session's memo, written before the write lock is taken, with the engine that wrote it
    and the tenant's memory it was written in view of. ``memo`` is None when the session was
    already committed with this content. ``attempt`` counts the memos written for one commit."""

    engine: MemoEngine
    memo: Memo | None
    memory: list[str]
    attempt: int = 1
    seconds: float = 0.0


def write_memo(
    kb: KnowledgeBase, session: Session, engine: MemoEngine | None = None, attempt: int = 1
) -> SessionMemo:
    """Write ``session``'s memo in view of the tenant's memory as committed now, without the
    write lock: an llm engine takes seconds to minutes, and every other writer (an ingest, a
    chat's batch commit) would wait for it. :func:`memorize_writes` then uses the memo under
    the lock only if that memory is still the tenant's."""
    started = time.perf_counter()
    check_session_size(kb, session)
    engine = engine or OfflineMemo(int(kb.settings.section("memorizer")["memo_sentences"]))
    previous, memory = _committed_state(kb, session, kb.head() or "HEAD", warn=False)
    lines = _memo_memory(memory)
    if previous and previous.get("content_sha256") == session.content_hash():
        return SessionMemo(engine, None, lines, attempt, time.perf_counter() - started)
    memo = engine.write(session, lines)
    return SessionMemo(engine, memo, lines, attempt, time.perf_counter() - started)


def memorize_writes(
    kb: KnowledgeBase, session: Session, memo: SessionMemo
) -> tuple[dict[str, bytes | None], IngestResult]:
    """The files memorizing ``session`` with ``memo`` writes (``{path: bytes, or None to
    delete}``) and the result, without committing: for callers that commit them together
    with other files. Hold ``kb.write_lock()`` from this call until the commit, so the memory
    it read stays current. Status ``unchanged`` comes with no writes.

    When the tenant's memory changed since the memo was written (or the session's committed
    content did, and there is no memo), a quick engine writes it again here, in view of the
    memory now; for a slow one this raises MemoOutdated, to write it again outside the lock.
    After ``MEMO_ATTEMPTS`` slow memos the last one is kept, written in view of memory a few
    sessions behind: memorizing never waits for a model while it holds the lock, nor starves
    while other sessions keep coming in."""
    started = time.perf_counter()
    tenant, sid = session.tenant_id, session.session_id
    prefix = tenant_prefix(tenant)
    digest = session.content_hash()
    with kb.write_lock():
        previous, memory = _committed_state(kb, session)
        if previous and previous.get("content_sha256") == digest:
            return {}, IngestResult(
                tenant,
                sid,
                "unchanged",
                list(previous.get("pages", [])),
                None,
                previous.get("memo", ""),
                seconds=memo.seconds + time.perf_counter() - started,
            )
        written = _current_memo(session, memo, _memo_memory(memory))
        text = written.text
        when = session.created_at[:10]
        before = [e for e in memory if e[0] <= when][-HEADER_CONTEXT_SESSIONS:]
        version = _memo_version(previous) + 1
        writes, page_ids, turn_pages = _page_writes(kb, session, text, version, before)
        old_paths = _old_page_paths(kb, prefix, sid, previous)
        for old_path in sorted(old_paths - writes.keys()):
            writes[old_path] = None
        record = _session_record(session, written, page_ids, version, turn_pages, digest)
        writes[_record_path(session)] = dump_yaml(record).encode("utf-8")
        entries = [*memory, (when, sid, one_line(text))]
        writes[prefix + "MEMORY.md"] = render_memory(tenant, entries).encode("utf-8")
        status = "updated" if previous or old_paths else "created"
    return writes, IngestResult(
        tenant,
        sid,
        status,
        page_ids,
        None,
        text,
        written.fallback_reason,
        memo.seconds + time.perf_counter() - started,
    )


def _current_memo(session: Session, memo: SessionMemo, lines: list[str]) -> Memo:
    """``memo``'s memo when it was written in view of the memory ``lines`` are now; else one
    written again by a quick engine, or MemoOutdated for a slow one (unless it has had its
    ``MEMO_ATTEMPTS``: then the last one is kept, see :func:`memorize_writes`)."""
    written = memo.memo
    if written is None or lines != memo.memory:
        if not memo.engine.slow:
            written = memo.engine.write(session, lines)
        elif written is None or memo.attempt < MEMO_ATTEMPTS:
            raise MemoOutdated(session.session_id)
    return written


def _page_writes(
    kb: KnowledgeBase,
    session: Session,
    memo_text: str,
    version: int,
    before: list[tuple[str, str, str]],
) -> tuple[dict[str, bytes | None], list[str], dict[str, str]]:
    """The pages of ``session`` (its turns split to the page size): ``(writes, page ids,
    {turn id: page id})``; ``before`` is the memory its pages' headers are written in view of."""
    sid = session.session_id
    prefix = tenant_prefix(session.tenant_id)
    turns = [Turn(t.id, t.speaker, t.timestamp, t.text) for t in session.turns]
    groups = split_turns(turns, kb.settings.page_tokens)
    writes: dict[str, bytes | None] = {}
    page_ids: list[str] = []
    turn_pages: dict[str, str] = {}
    for seq, group in enumerate(groups, start=1):
        page_id = session_page_id(sid, seq)
        page_ids.append(page_id)
        turn_pages.update({t.id: page_id for t in group})
        meta = {
            "id": page_id,
            "session_id": sid,
            "tenant_id": session.tenant_id,
            "agent_id": session.agent_id,
            "sequence": seq,
            "title": session.title,
            "created_at": session.created_at,
            "memo": memo_text,
            "memo_version": version,
            "tags": session.tags,
            "classification": session.classification,
            "policy_tags": session.policy_tags,
            "origin_run_id": session.origin_run_id,
            "request_intent": session.request_intent,
            "turns": [group[0].id, group[-1].id],
            "header": header_text(session, seq, len(groups), group, before),
        }
        page = Page(meta=meta, body=_page_body(session, seq, group))
        writes[f"{prefix}pages/{sid}/{seq}.md"] = render_page(page).encode("utf-8")
    return writes, page_ids, turn_pages


def _committed_state(
    kb: KnowledgeBase, session: Session, rev: str = "HEAD", warn: bool = True
) -> tuple[dict[str, Any] | None, list[tuple[str, str, str]]]:
    """The session's record and the tenant's memory of the other sessions, at ``rev`` (see
    _committed_record for ``warn``)."""
    record = _committed_record(kb, _record_path(session), rev, warn)
    memory = [e for e in read_memory(kb, session.tenant_id, rev) if e[1] != session.session_id]
    return record, memory


def _record_path(session: Session) -> str:
    return f"{tenant_prefix(session.tenant_id)}sessions/{session.session_id}.yaml"


def _memo_memory(memory: list[tuple[str, str, str]]) -> list[str]:
    """The memory as a memo engine reads it."""
    return [f"[{d}] {s}: {m}" for d, s, m in memory]


def _page_body(session: Session, seq: int, turns: list[Turn]) -> str:
    heading = session.title or session.session_id
    return f"# {heading} (page {seq})\n\n" + render_turns(turns)


def _committed_record(
    kb: KnowledgeBase, path: str, rev: str = "HEAD", warn: bool = True
) -> dict[str, Any] | None:
    """The session's record as committed (not as in the work tree: after a crash the work
    tree may hold files of a commit that never happened). A record broken by hand is named
    in a warning (unless ``warn`` is False: the memo, written before the lock, reads it
    too) and written anew."""
    try:
        data = yaml.load(kb.read_bytes(path, rev), Loader=Loader)
    except NotFound:
        return None
    except yaml.YAMLError as exc:
        if not warn:
            return None
        log.warning(
            "%s is not valid YAML (%s); the session is memorized anew",
            path,
            " ".join(str(exc).split()),
        )
        return None
    if not isinstance(data, dict):
        if warn:
            log.warning("%s is not a mapping; the session is memorized anew", path)
        return None
    return data


def _memo_version(record: dict[str, Any] | None) -> int:
    """The memo version a session record gives (0 for none, or one broken by hand)."""
    value = (record or {}).get("memo_version", 0)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _old_page_paths(
    kb: KnowledgeBase, prefix: str, sid: str, record: dict[str, Any] | None
) -> set[str]:
    """The session's pages at HEAD, as its record lists them; when the record cannot say
    (missing or broken by hand), every page in the session's folder, so that no page of an
    older version stays behind. Never another session's page, nor a file that is no page."""
    listed = (record or {}).get("pages")
    if isinstance(listed, list):
        candidates = [f"{prefix}pages/{p}.md" for p in listed if isinstance(p, str)]
    else:
        candidates = list(kb.list_files(f"{prefix}pages/{sid}/"))
    return {
        path
        for path in candidates
        if (page_id_for(path[len(prefix) :]) or "").startswith(f"{sid}/")
    }
