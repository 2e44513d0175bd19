"""One tenant's chats as a :class:`~kbmem.interfaces.service.Memory` holds them open for a
server: opened, sent to, closed (their pending turns committed) and closed when idle; and the
recovery of turns a killed server left in the journal."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from kbmem.errors import KbmemError, NotFound, TooMany
from kbmem.interfaces.args import field_named, text_arg, window_args
from kbmem.interfaces.shapes import turn_reply_dict, turn_summary_dict
from kbmem.store.repository import KnowledgeBase

log = logging.getLogger(__name__)

CHAT_IDLE_SECONDS = 300.0
MAX_OPEN_CHATS = 64


class Chats:
    """The chat operations of a tenant's memory (its ``_chats``, guarded by ``_chats_lock``)."""

    kb: KnowledgeBase
    tenant: str
    model: str | None
    _chats_lock: threading.Lock
    _chats: dict[str, OpenChat]

    def open_chat(self, chat_id: Any = None) -> tuple[str, bool]:
        """Open a chat: a new one, under a new id, without ``chat_id``; else the tenant's
        chat of that id (NotFound when it has none). Returns its id, and whether it was
        opened now (False: it was open already). A chat open in another process is refused
        (InUse) by the chat's journal lock; at most ``MAX_OPEN_CHATS`` are open at once,
        since each holds its journal open until it is closed or idle. A new chat is recorded
        before its id is given out, so that it is known while open before its first turn
        (see :func:`~kbmem.agent.journal.record_chat`); closed before it, it is gone."""
        from kbmem.agent.journal import record_chat
        from kbmem.agent.session import ChatSession, new_chat_id

        if chat_id is not None:
            chat_id = self._existing_chat(chat_id)
        with self._chats_lock:
            if chat_id in self._chats:
                self._chats[chat_id].used = time.monotonic()
                return chat_id, False
            if len(self._chats) >= MAX_OPEN_CHATS:
                raise TooMany(
                    f"{MAX_OPEN_CHATS} chats are open for this tenant; close one first "
                    "(they also close after a while unused)"
                )
            if chat_id is None:
                chat_id = new_chat_id()
                record_chat(self.kb, self.tenant, chat_id)
            chat = OpenChat(ChatSession(self.kb, self.tenant, self.model, chat_id))
            self._chats[chat_id] = chat
            return chat_id, True

    def _existing_chat(self, chat_id: Any) -> str:
        """``chat_id``, checked, if the tenant has that chat (see :meth:`_known_chat`). A
        client names a chat only to continue it: an id it made up, or misspelt, would
        otherwise start a new chat silently, and one another client made up too would be
        shared."""
        from kbmem.agent.session import check_chat_id

        chat_id = check_chat_id(chat_id)
        if not self._known_chat(chat_id):
            raise NotFound(
                f"tenant {self.tenant!r} has no chat {chat_id!r}; start a new chat without "
                "an id, and use the id it is given"
            )
        return str(chat_id)

    def _known_chat(self, chat_id: str) -> bool:
        """Whether the tenant has the chat ``chat_id`` (a checked id): open here, or as
        :func:`~kbmem.agent.provenance.known_chat` knows it (turns committed, a journal, or
        started by a client and closed before its first turn)."""
        from kbmem.agent.provenance import known_chat

        with self._chats_lock:
            if chat_id in self._chats:
                return True
        return known_chat(self.kb, self.tenant, chat_id)

    def _forget_chat_record(self, chat_id: str) -> None:
        """Drop a closed chat's record: git's turns keep a chat that had any known from then
        on, and one closed before its first turn is gone (nothing of it is left under
        ``.kbmem/chats/``)."""
        from kbmem.agent.journal import forget_chat_record

        forget_chat_record(self.kb, self.tenant, chat_id)

    def send(self, chat_id: Any, message: Any) -> dict[str, Any]:
        """One turn of the chat ``chat_id`` (opened first if need be; NotFound when the
        tenant has no such chat), or of a new chat without ``chat_id``. Turns of one chat
        run one after another; a second message waits for the first answer."""
        message = text_arg(message, "message")
        chat_id, _ = self.open_chat(chat_id)
        with self._chats_lock:
            chat = self._chats.get(chat_id)
        if chat is None:
            raise NotFound(f"chat {chat_id!r} was closed")
        with chat.turn:
            if chat.session.closed:
                raise NotFound(f"chat {chat_id!r} was closed")
            chat.used = time.monotonic()
            record = chat.session.send(message)
            chat.used = time.monotonic()
        return turn_reply_dict(record)

    def close_chat(self, chat_id: Any, *, wait: bool = True) -> dict[str, Any]:
        """Commit the chat's pending turns and release it (after its running turn, if any;
        with ``wait=False``, a chat in the middle of a turn is left open: None is returned)."""
        from kbmem.agent.session import check_chat_id

        chat_id = check_chat_id(chat_id)
        with self._chats_lock:
            chat = self._chats.get(chat_id)
        if chat is None:
            raise self._not_open(chat_id)
        if not chat.turn.acquire(blocking=wait):
            return {"chat_id": chat_id, "commit": None, "closed": False}
        try:
            if chat.session.closed:
                raise self._not_open(chat_id)
            # Closed first, forgotten after: a commit that fails (the knowledge base stayed
            # locked) leaves the chat open and its turns pending, to be closed again later.
            commit = chat.session.close()
            with self._chats_lock:
                if self._chats.get(chat_id) is chat:
                    del self._chats[chat_id]
            self._forget_chat_record(chat_id)
            return {"chat_id": chat_id, "commit": commit, "closed": True}
        finally:
            chat.turn.release()

    def _not_open(self, chat_id: str) -> NotFound:
        """Closing a chat that is not open here: one the tenant has is closed (or open in
        another process), one it does not have is named as :meth:`list_turns` names it."""
        if self._known_chat(chat_id):
            return NotFound(f"chat {chat_id!r} is not open")
        return NotFound(f"tenant {self.tenant!r} has no chat {chat_id!r}")

    def close_idle_chats(self, idle_seconds: float) -> list[str]:
        """Close (and commit) the chats nobody has used for ``idle_seconds``; a chat in the
        middle of a turn is not idle."""
        now = time.monotonic()
        with self._chats_lock:
            idle = [c for c, chat in self._chats.items() if now - chat.used >= idle_seconds]
        closed = []
        for chat_id in idle:
            try:
                if self.close_chat(chat_id, wait=False)["closed"]:
                    closed.append(chat_id)
            except NotFound:
                continue  # closed by another thread in the meantime
        return closed

    def list_turns(
        self, chat_id: Any = None, limit: Any = None, offset: Any = None
    ) -> dict[str, Any]:
        """A window of the tenant's chat turns (or one chat's), committed and pending, as
        ``{turns, total, next_offset}``, as :func:`~kbmem.agent.provenance.list_turns` lists
        them: each chat's in turn order, the chats merged by when each turn started (then
        chat id and turn number), and only the window's turns read. NotFound for a chat the
        tenant does not have; a chat closed before its first turn has none."""
        from kbmem.agent.provenance import list_turns
        from kbmem.agent.session import check_chat_id

        limit, offset = window_args(limit, offset)
        if chat_id is not None:
            chat_id = check_chat_id(chat_id)
        listed = list_turns(self.kb, self.tenant, chat_id, limit, offset)
        return {
            "turns": [turn_summary_dict(t) for t in listed.turns],
            "total": listed.total,
            "next_offset": listed.next_offset,
        }

    def audit(self, turn_id: Any) -> dict[str, Any]:
        from kbmem.agent.provenance import audit_turn, parse_turn_id

        with field_named("turn_id", "TURN", "turn", "chat_id"):
            chat_id, turn = parse_turn_id(text_arg(turn_id, "turn_id"))
        return audit_turn(self.kb, self.tenant, chat_id, turn).to_dict()

    def close(self) -> None:
        """Commit every open chat's pending turns and release their journals. A chat that
        fails to commit (its turns stay in its journal for the next chat session to recover)
        does not keep the others open: the first failure is raised after all were tried."""
        with self._chats_lock:
            chat_ids = list(self._chats)
        failure: KbmemError | None = None
        for chat_id in chat_ids:
            try:
                self.close_chat(chat_id)
            except NotFound:
                continue
            except KbmemError as exc:
                failure = failure or exc
        if failure is not None:
            raise failure


def recover_chats(kb: KnowledgeBase) -> list[str]:
    """Commit the turns that chats of an earlier run left in the journal (a server killed
    before it could commit them): a server calls this when it starts, rather than leaving
    them until some client opens a chat. Returns the commits made; a failure (the knowledge
    base stayed locked) is logged and left for the next chance."""
    from kbmem.agent.batch import BatchCommitter, turn_span
    from kbmem.agent.events import BatchCommitted
    from kbmem.agent.journal import recover_journals

    def note(event: Any) -> None:
        if isinstance(event, BatchCommitted):
            log.info(
                "committed chat %s %s that an earlier run left (%s)",
                event.chat_id,
                turn_span(event.first, event.last),
                event.commit[:10],
            )
        else:
            log.warning("%s", getattr(event, "message", event))

    try:
        return recover_journals(kb, BatchCommitter(kb), note)
    except KbmemError as exc:
        log.warning("journaled chat turns not committed yet: %s", exc)
        return []


def close_idle_chats_until(
    stop: threading.Event,
    memories: Callable[[], Iterable[Chats]],
    idle_seconds: float = CHAT_IDLE_SECONDS,
) -> None:
    """Until ``stop`` is set, close (and commit) the chats of ``memories()`` that nobody has
    used for ``idle_seconds``: a chat's turns are committed in batches, and a client that
    stops talking would otherwise leave its last turns waiting in the journal. Meant to run
    in a daemon thread beside a server."""
    while not stop.wait(min(60.0, idle_seconds / 2)):
        for memory in list(memories()):
            try:
                memory.close_idle_chats(idle_seconds)
            except Exception:  # one chat's failure must not stop the closing of the others
                log.exception("closing idle chats of tenant %s", memory.tenant)


class OpenChat:
    """A chat this memory holds open: its session, the lock its turns run under, and when
    it was last used."""

    def __init__(self, session: Any):
        self.session = session
        self.turn = threading.Lock()
        self.used = time.monotonic()
