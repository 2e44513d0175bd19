"""A chat with the knowledge base: the one API the TUI, the CLI and the benchmarks use.

::

    chat = ChatSession(kb, tenant)                 # offline agent; or model="openai/..."
    record = chat.send("Where is the offsite?", on_event=print)
    chat.close()                                   # commits what is pending

``send`` runs synchronously (the TUI calls it from a worker thread) and reports progress
through ``on_event`` (see :mod:`kbmem.agent.events`). Each finished turn is appended to a
journal under ``.kbmem/journal/`` and fsynced before ``TurnFinished`` is reported; every
``chat.batch_turns`` turns (``kbmem.yaml``, default 5) and at ``close()``, one commit adds the
turns' provenance snapshots and the chat itself memorized as session pages, with the trailer
``Kbmem-Turns: <chat-id> <first>-<last>``. Opening a chat first commits, exactly once, the
turns that a crashed earlier run left in the journal.

``cancel()`` (from any thread) stops the running turn at its next step; the turn is journaled
as ``interrupted``. A ``KeyboardInterrupt`` during ``send`` does the same and is re-raised.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from kbmem.agent.batch import BatchCommitter, ChatLine, load_chat_lines
from kbmem.agent.context import TurnCancelled, TurnContext
from kbmem.agent.events import AgentEvent, Notice, TurnFinished, TurnStarted
from kbmem.agent.journal import ChatJournal, recover_journals
from kbmem.agent.records import TurnRecord
from kbmem.agent.tools import AgentTools
from kbmem.config import MAX_REQUEST_CHARS
from kbmem.errors import KbmemError, ValidationError
from kbmem.ids import check_segment, check_tenant
from kbmem.llm.client import LLMConfig
from kbmem.research.researcher import Researcher
from kbmem.store.repository import KnowledgeBase

if TYPE_CHECKING:  # imported where a session picks its agent, so only that one loads
    from kbmem.agent.llm_agent import LLMAgent
    from kbmem.agent.offline import OfflineAgent

EventSink = Callable[[AgentEvent], None]
MAX_CHAT_ID = 100


def new_chat_id() -> str:
    """A fresh chat id: the UTC time it started plus a little randomness."""
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def check_chat_id(value: object) -> str:
    """A chat id becomes a path segment (``turns/<chat-id>/``) and part of a session id."""
    chat_id = check_segment(value, "chat_id")
    if len(chat_id) > MAX_CHAT_ID:
        raise ValidationError(f"longer than {MAX_CHAT_ID} characters", "chat_id")
    return chat_id


def _ignore(_event: AgentEvent) -> None:
    return None


class ChatSession:
    """One chat of one tenant with one agent.

    ``model``: a litellm model string for the LLM agent; None takes ``llm.model`` from the
    settings (``KBMEM_MODEL``), and when that is empty too the offline agent answers.
    ``chat_id``: continue an earlier chat (its committed turns are its history) or name a new
    one; None makes a new id. ``on_event`` receives chat-wide events that happen outside
    ``send`` (turns recovered from the journal at start, the final batch commit at close).
    ``batch_turns`` overrides ``chat.batch_turns``.
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        tenant: str,
        model: str | None = None,
        chat_id: str | None = None,
        *,
        on_event: EventSink | None = None,
        batch_turns: int | None = None,
    ):
        self.kb = kb
        self.tenant = check_tenant(tenant)
        self.chat_id = check_chat_id(chat_id) if chat_id is not None else new_chat_id()
        self.batch_turns = int(batch_turns or kb.settings.batch_turns)
        if self.batch_turns < 1:
            raise ValidationError("must be at least 1", "batch_turns")
        self.llm_config = LLMConfig.from_settings(kb.settings, model)
        self.on_event = on_event or _ignore
        self._cancel = threading.Event()
        self._busy = threading.Lock()
        self._closed = False
        self.researcher = Researcher(kb, self.tenant)
        self.tools = AgentTools(kb, self.tenant, self.researcher)
        self.committer = BatchCommitter(kb)
        # Another process's crashed chats (and this chat's own crashed run) come first.
        recover_journals(kb, self.committer, self.on_event)
        self.journal = ChatJournal.open(kb, self.chat_id, self.tenant)
        self._history: list[ChatLine] = load_chat_lines(kb, self.tenant, self.chat_id)
        self._pending: list[TurnRecord] = []
        last = max((line.turn for line in self._history), default=0)
        self._next_turn = last + 1
        self.agent: OfflineAgent | LLMAgent
        if self.llm_config is None:
            from kbmem.agent.offline import OfflineAgent

            self.agent = OfflineAgent()
        else:
            from kbmem.agent.llm_agent import LLMAgent

            self.agent = LLMAgent(self.llm_config)

    def warm(self, cancel: threading.Event | None = None) -> None:
        """Get the research tools ready before the first message (index synced and read once;
        the embedding model is not loaded here): for a front end that has idle time first.
        Setting ``cancel`` (the front end is closing) stops the sync with Cancelled."""
        self.researcher.toolkit.index.warm(cancel)

    # -- state ------------------------------------------------------------------------------

    @property
    def agent_name(self) -> str:
        """``offline`` or ``llm``."""
        return self.agent.name

    @property
    def model(self) -> str | None:
        return self.llm_config.model if self.llm_config else None

    @property
    def pending_turns(self) -> list[int]:
        """Turn numbers journaled but not committed yet."""
        return [r.turn for r in self._pending]

    @property
    def next_turn(self) -> int:
        return self._next_turn

    @property
    def history(self) -> list[tuple[int, str, str]]:
        """``(turn, question, answer)`` of every turn of this chat so far, oldest first."""
        return [(line.turn, line.question, line.answer) for line in self._history]

    @property
    def closed(self) -> bool:
        return self._closed

    # -- turns ------------------------------------------------------------------------------

    def send(self, message: str, on_event: EventSink | None = None) -> TurnRecord:
        """Run one turn: the agent answers ``message``, streaming through ``on_event``.

        Returns the journaled :class:`TurnRecord`; its ``status`` says whether the turn is
        ``complete``, ``partial`` (the model's stream died), ``interrupted`` or ``failed``.
        Raises ValidationError for an empty or oversized message (nothing is journaled) and
        re-raises KeyboardInterrupt after journaling the turn as interrupted.
        """
        if self._closed:
            raise ValidationError("the chat is closed", "chat")
        if not isinstance(message, str) or not message.strip():
            raise ValidationError("must be non-empty text", "message")
        if len(message) > MAX_REQUEST_CHARS:
            raise ValidationError(f"longer than {MAX_REQUEST_CHARS} characters", "message")
        sink = on_event or self.on_event
        if not self._busy.acquire(blocking=False):
            raise ValidationError("a turn is already running in this chat", "chat")
        try:
            return self._run_turn(message, sink)
        finally:
            self._busy.release()

    def _run_turn(self, message: str, sink: EventSink) -> TurnRecord:
        self._cancel.clear()
        turn = self._next_turn
        ctx = TurnContext(
            chat_id=self.chat_id,
            turn=turn,
            tenant=self.tenant,
            message=message,
            history=self.history,
            tools=self.tools,
            emit=sink,
            cancel_event=self._cancel,
        )
        ctx.emit(
            TurnStarted(
                chat_id=self.chat_id,
                turn=turn,
                message=message,
                agent=self.agent.name,
                model=self.model,
            )
        )
        interrupt: BaseException | None = None
        try:
            self.agent.run(ctx)
        except TurnCancelled:
            ctx.mark("interrupted", "cancelled by the user")
        except KeyboardInterrupt as exc:
            ctx.mark("interrupted", "interrupted (Ctrl-C)")
            interrupt = exc
        except KbmemError as exc:
            ctx.mark("failed", str(exc))
        except Exception as exc:
            # A bug: still journal what the turn did, then let it surface.
            ctx.mark("failed", f"{type(exc).__name__}: {exc}")
            interrupt = exc
        record = ctx.record(agent=self.agent.name, model=self.model)
        self.journal.append(record)
        self._next_turn = turn + 1
        self._pending.append(record)
        self._history.append(ChatLine.from_record(record))
        sink(
            TurnFinished(
                chat_id=self.chat_id,
                turn=turn,
                status=record.status,
                answer=record.answer,
                duration_ms=record.duration_ms,
                pending_turns=len(self._pending),
                error=record.error,
            )
        )
        if interrupt is None and len(self._pending) >= self.batch_turns:
            self._try_commit(sink)
        if interrupt is not None:
            raise interrupt
        return record

    def cancel(self) -> None:
        """Ask the running turn to stop at its next step (safe from any thread)."""
        self._cancel.set()

    # -- commits ----------------------------------------------------------------------------

    def _try_commit(self, sink: EventSink) -> None:
        try:
            self.commit_now(sink)
        except KbmemError as exc:
            # Nothing is lost: the turns stay journaled and the next batch retries.
            sink(
                Notice(
                    chat_id=self.chat_id,
                    turn=0,
                    level="warning",
                    message=f"batch commit postponed: {exc}",
                )
            )

    def commit_now(self, on_event: EventSink | None = None) -> str | None:
        """Commit the pending turns now (waiting for another writer if needed); returns the
        commit id, or None when nothing was pending. Raises LockTimeout when the knowledge
        base stayed locked past ``git.lock_timeout_s``; the turns stay journaled."""
        if not self._pending:
            return None
        sink = on_event or self.on_event
        sha = self.committer.commit(
            self.chat_id, list(self._pending), list(self._history), self.journal, sink
        )
        self._pending.clear()
        return sha

    def close(self) -> str | None:
        """End the chat: commit what is pending and release the chat's journal. Returns the
        last commit id (None if nothing was pending). Safe to call twice."""
        if self._closed:
            return None
        sha = self.commit_now()
        self._closed = True
        self.journal.close(remove=not self._pending)
        self.researcher.close()
        return sha

    def __enter__(self) -> ChatSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def now_iso(at: float | None = None) -> str:
    """A timestamp as pages store it (ISO 8601, UTC, no spaces)."""
    return datetime.fromtimestamp(time.time() if at is None else at, UTC).isoformat(
        timespec="seconds"
    )
