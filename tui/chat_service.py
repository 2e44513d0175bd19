"""The one chat the app holds open: a :class:`kbmem.agent.session.ChatSession`, opened on first
use from a worker thread (opening imports the researcher and may commit turns a crashed run left
in the journal), replaced by ``new`` and closed (pending turns committed) at exit."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from .workspace import Workspace

if TYPE_CHECKING:
    from kbmem.agent.events import AgentEvent
    from kbmem.agent.records import TurnRecord
    from kbmem.agent.session import ChatSession

EventSink = Callable[["AgentEvent"], None]


class ChatService:
    """Thread-safe holder of the current chat. Every method may block: call from workers."""

    def __init__(self, workspace: Workspace, on_event: EventSink, chat_id: str | None = None):
        self.workspace = workspace
        self.on_event = on_event
        self.first_chat_id = chat_id
        self._session: ChatSession | None = None
        self._lock = threading.RLock()
        self._records: dict[str, TurnRecord] = {}
        # Set to stop the turn being prepared (its index sync) as well as the one running.
        self._stop_turn = threading.Event()

    @property
    def session(self) -> ChatSession | None:
        """The open chat, or None before it has opened."""
        return self._session

    def get(self) -> ChatSession:
        """The open chat, opening it first if needed."""
        with self._lock:
            if self._session is None or self._session.closed:
                from kbmem.agent.session import ChatSession

                self._session = ChatSession(
                    self.workspace.kb_for_chat(),
                    self.workspace.tenant,
                    self.workspace.model,
                    self.first_chat_id,
                    on_event=self.on_event,
                )
                self.first_chat_id = None
            return self._session

    def new(self, model: str | None = None) -> ChatSession:
        """Close the current chat (committing its pending turns) and open a new one."""
        with self._lock:
            self.close()
            if model is not None:
                self.workspace.model = model or None
            return self.get()

    def commit_now(self) -> str | None:
        with self._lock:
            session = self._session
        return session.commit_now() if session is not None else None

    def cancel(self) -> None:
        """Stop the turn that runs (journaled as interrupted) or is being prepared."""
        self._stop_turn.set()
        session = self._session
        if session is not None:
            session.cancel()

    def close(self) -> str | None:
        with self._lock:
            session, self._session = self._session, None
        return session.close() if session is not None else None

    def send(
        self,
        message: str,
        on_event: EventSink,
        prepare: Callable[[threading.Event], object] | None = None,
    ) -> TurnRecord:
        """Run one turn of the open chat. ``prepare`` runs first (the index brought to HEAD,
        its progress shown), given the event that :meth:`cancel` sets; it stops the turn
        before it starts by raising (Cancelled)."""
        self._stop_turn.clear()
        session = self.get()
        if prepare is not None:
            prepare(self._stop_turn)
        return session.send(message, on_event=on_event)

    def remember(self, record: TurnRecord) -> None:
        """Keep a turn's record: the Audit screen shows this session's turns before they are
        committed (and before the journal has them all)."""
        self._records[record.turn_id] = record

    def records(self) -> list[TurnRecord]:
        return list(self._records.values())
