"""The chat journal: finished turns are safe on disk before anyone is told they are done.

Layout under ``.kbmem/journal/``, a folder per tenant (chat ids are unique within a tenant
only: two tenants may each have a chat ``standup``, open at the same time)::

    <tenant>/<chat-id>.jsonl   one JSON object a line: {"type": "turn", "record": {...}} for
                               each finished turn, {"type": "committed", "first": n, "last": m,
                               "commit": sha} once a batch commit holding those turns has landed
    <tenant>/<chat-id>.lock    held (flock) by the process whose chat is open; removed, under
                               the lock, together with its journal once every turn is committed

Journals that an older kbmem left directly under ``journal/`` are still read and recovered.

Beside them, ``.kbmem/chats/<tenant>/<chat-id>`` records a chat a client started (the HTTP API
and the MCP server give out its id before its first turn): until git has a turn of it, the
record is what keeps a chat closed before its first turn known (see :func:`record_chat`).

Each line is appended, flushed and fsynced. A line torn by a crash is the last one and is
ignored (its turn was never reported done). A journal whose lock nobody holds belongs to a
chat that ended or crashed: :func:`recover_journals` commits its uncommitted turns, checking
git for the ``Kbmem-Turns`` trailer first, so that a crash after the commit but before the
``committed`` line cannot commit a turn twice.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbmem.agent.events import AgentEvent, Notice
from kbmem.agent.records import TurnRecord
from kbmem.errors import InUse, KbmemError, StorageError, ValidationError
from kbmem.ids import check_segment, check_tenant
from kbmem.store.locks import HeldLock, acquire
from kbmem.store.repository import KnowledgeBase

if TYPE_CHECKING:
    from kbmem.agent.batch import BatchCommitter

JOURNAL_DIR = "journal"
CHATS_DIR = "chats"
# Whose turn a journal line holds, read from its head as ChatJournal.append writes it
# (TurnRecord.to_dict's first keys, in their order, compactly), without parsing the line: a
# line holds the whole record, tool calls and research traces included, and parsing it costs
# far more than this match. A line of any other form is parsed in full.
_TURN_HEAD = re.compile(
    rb'\{"type":"turn","record":\{"chat_id":"([A-Za-z0-9._-]+)","turn":([0-9]+),'
    rb'"tenant":"([A-Za-z0-9._-]+)",'
)


def journal_dir(kb: KnowledgeBase) -> Path:
    path = kb.state_dir / JOURNAL_DIR
    path.mkdir(parents=True, exist_ok=True)
    return path


def tenant_journal_dir(kb: KnowledgeBase, tenant: str) -> Path:
    """The folder of the tenant's chat journals (tenant folders are never removed: another
    process may be about to lock a chat in it)."""
    path = journal_dir(kb) / check_tenant(tenant)
    path.mkdir(exist_ok=True)
    return path


def journal_paths(kb: KnowledgeBase, tenant: str, chat_id: str | None = None) -> list[Path]:
    """The journal files that may hold turns of the tenant's chats (or of one chat): its own
    folder's, and those an older kbmem kept directly under ``journal/`` (whose records say
    their tenant: read them, keep the tenant's)."""
    name = f"{check_segment(chat_id, 'chat_id')}.jsonl" if chat_id else "*.jsonl"
    root = journal_dir(kb)
    return sorted((root / check_tenant(tenant)).glob(name)) + sorted(root.glob(name))


def journaled_chat(kb: KnowledgeBase, tenant: str, chat_id: str) -> bool:
    """Whether the tenant's chat ``chat_id`` has a journal or a lock: a chat open now (maybe
    before its first turn) or one whose turns are not all committed yet."""
    check_segment(chat_id, "chat_id")
    folder = tenant_journal_dir(kb, tenant)
    return any((folder / f"{chat_id}{ext}").exists() for ext in (".jsonl", ".lock"))


def chat_record(kb: KnowledgeBase, tenant: str, chat_id: str) -> Path:
    """Where the tenant's chat ``chat_id`` is recorded as started (see :func:`record_chat`)."""
    return kb.state_dir / CHATS_DIR / check_tenant(tenant) / check_segment(chat_id, "chat_id")


def record_chat(kb: KnowledgeBase, tenant: str, chat_id: str) -> None:
    """Record that a client started the tenant's chat ``chat_id``: until it has a turn in git,
    the record is all that keeps a chat known once it is closed (its journal goes with it)."""
    record = chat_record(kb, tenant, chat_id)
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.touch()
    except OSError as exc:
        raise StorageError(f"cannot record the new chat {chat_id}: {exc}") from exc


def forget_chat_record(kb: KnowledgeBase, tenant: str, chat_id: str) -> None:
    """Drop the record of a started chat (once git has its turns, which keep it known)."""
    with suppress(OSError):
        chat_record(kb, tenant, chat_id).unlink(missing_ok=True)


def _journal_folders(kb: KnowledgeBase) -> list[Path]:
    root = journal_dir(kb)
    return [root, *sorted(p for p in root.iterdir() if p.is_dir())]


@dataclass
class JournalState:
    """What a journal file says: every turn it holds and which of them are committed."""

    turns: list[TurnRecord]
    committed: set[int]

    @property
    def pending(self) -> list[TurnRecord]:
        return [r for r in self.turns if r.turn not in self.committed]


def read_journal(path: Path, keep: Callable[[str, str, int], bool] | None = None) -> JournalState:
    """The turns a journal holds (a turn's last line counts; a line torn by a crash is left
    out) and which of them are committed. With ``keep``, only the turns whose ``(tenant,
    chat id, turn)`` it takes: a line of another turn is passed over without being parsed,
    so that a listing reads of an open chat's journal only the turns git lacks."""
    turns: dict[int, TurnRecord] = {}
    committed: set[int] = set()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return JournalState([], set())
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        if keep is not None and (head := _turn_head(line)) and not keep(*head):
            continue
        try:
            entry = json.loads(line)
            if entry.get("type") == "turn":
                record = TurnRecord.from_dict(entry["record"])
                if keep is None or keep(record.tenant, record.chat_id, record.turn):
                    turns[record.turn] = record
            elif entry.get("type") == "committed":
                committed.update(range(int(entry["first"]), int(entry["last"]) + 1))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a line torn by a crash: its turn was never reported done
    return JournalState([turns[n] for n in sorted(turns)], committed)


def _turn_head(line: bytes) -> tuple[str, str, int] | None:
    """``(tenant, chat id, turn)`` of a turn's line, read from its head without parsing it;
    None for a line of another form."""
    head = _TURN_HEAD.match(line)
    return (head[3].decode(), head[1].decode(), int(head[2])) if head else None


def _lock_chat(path: Path) -> HeldLock | None:
    """The lock of a chat, or None when another process holds it (the chat is open there).
    Lock files are deleted by their holder when the chat's journal is done with."""
    return acquire(path, removable=True)


class ChatJournal:
    """The journal of one open chat (this process holds its lock)."""

    def __init__(self, path: Path, lock: HeldLock, chat_id: str, tenant: str):
        self.path = path
        self.lock_path = lock.path
        self.chat_id = chat_id
        self.tenant = tenant
        self._lock = lock

    @classmethod
    def open(cls, kb: KnowledgeBase, chat_id: str, tenant: str) -> ChatJournal:
        check_segment(chat_id, "chat_id")
        folder = tenant_journal_dir(kb, tenant)
        lock = _lock_chat(folder / f"{chat_id}.lock")
        if lock is None:
            raise InUse(f"chat {chat_id!r} is open in another process", "chat_id")
        return cls(folder / f"{chat_id}.jsonl", lock, chat_id, tenant)

    def _append(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            with open(self.path, "ab") as handle:
                handle.write(line.encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise StorageError(f"cannot write the chat journal {self.path}: {exc}") from exc

    def append(self, record: TurnRecord) -> None:
        """Journal a finished turn (flushed and fsynced when this returns)."""
        self._append({"type": "turn", "record": record.to_dict()})

    def mark_committed(self, first: int, last: int, commit: str | None) -> None:
        self._append({"type": "committed", "first": first, "last": last, "commit": commit})

    def state(self) -> JournalState:
        return read_journal(self.path)

    def close(self, remove: bool) -> None:
        """Release the chat; ``remove`` deletes the journal (everything in it committed)."""
        if remove:
            with suppress(FileNotFoundError):
                self.path.unlink()
        self._lock.release(remove=remove)


def recover_journals(
    kb: KnowledgeBase,
    committer: BatchCommitter,
    on_event: Callable[[AgentEvent], None],
) -> list[str]:
    """Commit the turns that chats which are no longer open left in the journal (a crash, a
    kill, a commit that could not get the lock), once each. Returns the commit ids made.
    Chats of other tenants are recovered too: the journal belongs to the knowledge base."""
    commits: list[str] = []
    for folder in _journal_folders(kb):
        commits += _recover_folder(folder, committer, on_event)
    return commits


def _recover_folder(
    folder: Path, committer: BatchCommitter, on_event: Callable[[AgentEvent], None]
) -> list[str]:
    commits: list[str] = []
    for path in sorted(folder.glob("*.jsonl")):
        chat_id = path.stem
        try:
            check_segment(chat_id, "chat_id")
        except ValidationError:
            continue
        lock = _lock_chat(folder / f"{chat_id}.lock")
        if lock is None:
            continue  # that chat is open in a live process
        try:
            state = read_journal(path)
            pending = state.pending
            if pending:
                journal = ChatJournal(path, lock, chat_id, pending[0].tenant)
                try:
                    sha = committer.recover(chat_id, pending, journal, on_event)
                except KbmemError as exc:
                    on_event(
                        Notice(
                            chat_id=chat_id,
                            turn=0,
                            level="warning",
                            message=f"journaled turns of chat {chat_id} not committed yet: {exc}",
                        )
                    )
                    continue
                if sha:
                    commits.append(sha)
            with suppress(FileNotFoundError):
                path.unlink()
            lock.release(remove=True)
        finally:
            lock.release()
    for lock_path in sorted(folder.glob("*.lock")):
        # The lock of a chat that ended before journaling a turn (or of an older kbmem).
        held = _lock_chat(lock_path)
        if held is None:
            continue  # an open chat that has not finished a turn yet
        held.release(remove=not lock_path.with_suffix(".jsonl").exists())
    return commits
