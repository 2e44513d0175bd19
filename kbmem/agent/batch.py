"""Batch commits of chat turns: one commit adds the turns' provenance snapshots and the chat
itself memorized as a session (so later chats can research what was said), with the trailers
``Kbmem-Turns: <chat-id> <first>-<last>``, ``Kbmem-Session`` and ``Kbmem-Tenant``.

Exactly once: under the write lock, the turns whose snapshot HEAD already holds are left
out, so replaying a journal after a crash between the commit and the journal's ``committed``
line adds nothing. The chat's memo is written before the lock is taken (an llm memo engine
takes seconds to minutes, and no other writer should wait for it). Another writer holding
the lock makes the commit wait and retry until ``git.lock_timeout_s``; on LockTimeout the
turns stay in the journal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from kbmem.agent.events import AgentEvent, BatchCommitted, Notice
from kbmem.agent.journal import ChatJournal
from kbmem.agent.provenance import EXCHANGE_FILES, committed_turn_numbers, read_turn, snapshot_files
from kbmem.agent.records import TurnRecord
from kbmem.errors import LockTimeout, NotFound, StorageError
from kbmem.memorize.memo import memo_engine
from kbmem.memorize.memorizer import MemoOutdated, SessionMemo, memorize_writes, write_memo
from kbmem.memorize.sessions import CHAT_AGENT, CHAT_PREFIX, Session, SessionTurn
from kbmem.store.locks import lock_timeout
from kbmem.store.repository import KnowledgeBase

TRAILER = "Kbmem-Turns"
TENANT_TRAILER = "Kbmem-Tenant"
LOCK_POLL_S = 0.5


def turn_span(first: int, last: int) -> str:
    """``turn 3`` or ``turns 1-4``: a batch's turns in words (the trailer keeps ``3-3``)."""
    return f"turn {first}" if first == last else f"turns {first}-{last}"


def chat_session_id(chat_id: str) -> str:
    """The session id a chat is memorized under."""
    return f"{CHAT_PREFIX}{chat_id}"


@dataclass
class ChatLine:
    """One exchange of a chat, as memorized: the user's message and the agent's answer."""

    turn: int
    question: str
    answer: str
    status: str
    started_at: float
    finished_at: float

    @classmethod
    def from_record(cls, record: TurnRecord) -> ChatLine:
        return cls(
            record.turn,
            record.question,
            record.answer,
            record.status,
            record.started_at,
            record.finished_at,
        )


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")


def chat_session(tenant: str, chat_id: str, lines: list[ChatLine]) -> Session:
    """The chat as a session for the memorizer: two turns per exchange, ``q<n>`` (the user)
    and ``a<n>`` (kbmem)."""
    turns = []
    for line in sorted(lines, key=lambda x: x.turn):
        meta = {"chat_id": chat_id, "turn": line.turn}
        turns.append(
            SessionTurn(
                f"q{line.turn}", "user", "user", _stamp(line.started_at), line.question, meta
            )
        )
        turns.append(
            SessionTurn(
                f"a{line.turn}",
                "assistant",
                CHAT_AGENT,
                _stamp(line.finished_at),
                line.answer,
                {**meta, "status": line.status},
            )
        )
    return Session(
        tenant_id=tenant,
        session_id=chat_session_id(chat_id),
        turns=turns,
        agent_id="kbmem-chat",
        title=f"Chat {chat_id}",
        tags=["chat"],
        metadata={"chat_id": chat_id},
    )


def load_chat_lines(kb: KnowledgeBase, tenant: str, chat_id: str) -> list[ChatLine]:
    """The committed exchanges of a chat, from its snapshots at HEAD (empty for a new chat).
    Only what an exchange needs is read: a turn whose tool calls were damaged by hand still
    has its question and answer, and the chat opens (TurnFormatError when those are
    damaged: the chat's pages are rebuilt from these lines, so none may go missing)."""
    if kb.head() is None:
        return []
    numbers = committed_turn_numbers(kb, tenant, chat_id).get(chat_id, [])
    lines = []
    for n in numbers:
        try:
            record = read_turn(kb, tenant, chat_id, n, names=EXCHANGE_FILES)
            lines.append(ChatLine.from_record(record))
        except NotFound:
            continue
    return lines


def committed_turns(kb: KnowledgeBase, tenant: str, chat_id: str) -> set[int]:
    """Turns of the tenant's chat ``chat_id`` whose snapshot is committed at HEAD. Read from
    the tree, under the tenant's own folder: it costs the chat's files, not a walk over all
    of history (``git log --grep`` took 0.13 s per batch at 20,000 commits), and a chat id
    another tenant also uses (``--chat standup``) cannot count."""
    return set(committed_turn_numbers(kb, tenant, chat_id).get(chat_id, []))


class BatchCommitter:
    """Commits batches of journaled turns for any chat of the knowledge base."""

    def __init__(self, kb: KnowledgeBase, lock_timeout_s: float | None = None):
        self.kb = kb
        self.lock_timeout_s = float(
            kb.settings.data["git"]["lock_timeout_s"] if lock_timeout_s is None else lock_timeout_s
        )
        self.last_commit_ms = 0.0

    def commit(
        self,
        chat_id: str,
        records: list[TurnRecord],
        history: list[ChatLine],
        journal: ChatJournal,
        on_event: Callable[[AgentEvent], None],
        recovered: bool = False,
    ) -> str | None:
        """One commit with ``records``' snapshots and the chat memorized from ``history``
        (every exchange so far); then the journal marks the turns committed."""
        if not records:
            return None
        started = time.perf_counter()
        session = chat_session(records[0].tenant, chat_id, history)
        sha = self._commit_waiting(chat_id, records, session, on_event)
        first, last = records[0].turn, records[-1].turn
        journal.mark_committed(first, last, sha)
        self.last_commit_ms = (time.perf_counter() - started) * 1000
        if sha:
            on_event(
                BatchCommitted(
                    chat_id=chat_id,
                    turn=0,
                    first=first,
                    last=last,
                    commit=sha,
                    duration_ms=round(self.last_commit_ms, 1),
                    recovered=recovered,
                )
            )
        return sha

    def _commit_waiting(
        self,
        chat_id: str,
        records: list[TurnRecord],
        session: Session,
        on_event: Callable[[AgentEvent], None],
    ) -> str | None:
        """The batch's commit, made under the write lock once it is free (up to the lock
        timeout, telling ``on_event`` once that it waits), the session's memo written first
        and again whenever another session of the tenant was memorized meanwhile."""
        engine = memo_engine(self.kb.settings)
        # The memo first, without the lock: an llm memo engine takes seconds to minutes, and
        # every other writer would wait for it.
        memo = write_memo(self.kb, session, engine)
        deadline = time.monotonic() + self.lock_timeout_s
        warned = False
        while True:
            try:
                with self.kb.write_lock(timeout=LOCK_POLL_S):
                    return self._commit_locked(chat_id, records, session, memo)
            except LockTimeout as exc:
                if time.monotonic() >= deadline:
                    # Each try waited LOCK_POLL_S; the writer was kept out for the whole wait.
                    raise lock_timeout(self.kb.root, self.lock_timeout_s) from exc
                if not warned:
                    warned = True
                    on_event(
                        Notice(
                            chat_id=chat_id,
                            turn=0,
                            level="info",
                            message="another writer holds the knowledge base; "
                            "the batch commit waits",
                        )
                    )
            except MemoOutdated:
                # Another session of the tenant was memorized meanwhile: a memo in view of
                # it, written outside the lock again; its time is no wait for the lock.
                took = time.monotonic()
                memo = write_memo(self.kb, session, engine, attempt=memo.attempt + 1)
                deadline += time.monotonic() - took
            except StorageError:
                # HEAD moved under us (someone committed by hand): try once more on top of it.
                if time.monotonic() >= deadline:
                    raise
                time.sleep(LOCK_POLL_S)

    def recover(
        self,
        chat_id: str,
        pending: list[TurnRecord],
        journal: ChatJournal,
        on_event: Callable[[AgentEvent], None],
    ) -> str | None:
        """Commit turns a crashed run left in the journal (its earlier turns come from git)."""
        tenant = pending[0].tenant
        known = {line.turn: line for line in load_chat_lines(self.kb, tenant, chat_id)}
        for record in pending:
            known[record.turn] = ChatLine.from_record(record)
        history = [known[n] for n in sorted(known)]
        return self.commit(chat_id, pending, history, journal, on_event, recovered=True)

    def _commit_locked(
        self, chat_id: str, records: list[TurnRecord], session: Session, memo: SessionMemo
    ) -> str | None:
        tenant = records[0].tenant
        done = committed_turns(self.kb, tenant, chat_id)
        todo = [r for r in records if r.turn not in done]
        if not todo:
            return None
        writes: dict[str, bytes | None] = {}
        for record in todo:
            writes.update(snapshot_files(record))
        memorized, result = memorize_writes(self.kb, session, memo)
        writes.update(memorized)
        first, last = todo[0].turn, todo[-1].turn
        return self.kb.commit_files(
            writes,
            f"Record chat {chat_id} {turn_span(first, last)}",
            {
                TRAILER: f"{chat_id} {first}-{last}",
                "Kbmem-Session": result.session_id,
                TENANT_TRAILER: tenant,
            },
        )
