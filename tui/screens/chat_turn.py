"""How the Chat screen shows the running turn's events: the reply's header and streamed text,
the trace panel's calls and research steps, the status bar's "busy", toasts for failures."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..widgets.chat_log import turn_foot
from ..widgets.follow import FollowScroll
from ..widgets.trace import TracePanel

if TYPE_CHECKING:
    from .chat import ChatScreen

Handler = Callable[[Any], Awaitable[None]]


class TurnEvents:
    """Applies each event of a turn to ``screen`` (on the UI thread, in the order sent).
    Events are told apart by ``kind``: importing kbmem.agent here would load the researcher
    (and its indexes) before the first paint."""

    def __init__(self, screen: ChatScreen) -> None:
        self.screen = screen
        self.handlers: dict[str, Handler] = {
            "turn_started": self.turn_started,
            "tool_call_started": self.tool_call_started,
            "research_trace": self.research_trace,
            "tool_call_finished": self.tool_call_finished,
            "reply_delta": self.reply_delta,
            "turn_finished": self.turn_finished,
            "batch_committed": self.chat_wide,
            "notice": self.chat_wide,
        }

    @property
    def panel(self) -> TracePanel:
        return self.screen.query_one(TracePanel)

    async def show(self, event: Any) -> None:
        handler = self.handlers.get(event.kind)
        if handler is not None:
            await handler(event)

    async def turn_started(self, event: Any) -> None:
        self.screen.last_turn_id = f"{event.chat_id}/{event.turn}"
        reply = self.screen.reply
        if reply is not None:
            who = f"kbmem · turn {event.turn} · {event.agent}"
            reply.name_turn(who + (f" · {event.model}" if event.model else ""))
        await self.panel.start_turn(event.turn, event.message, event.agent, event.model)

    async def tool_call_started(self, event: Any) -> None:
        app = self.screen.kbmem
        self.panel.tool_call_started(event.call_id, event.name, event.arguments)
        if event.name == "research" and app.status.syncing:
            self.panel.note(event.call_id, "waiting for the index to reach the latest commit…")
        app.set_status(busy=f"{event.name}…")

    async def research_trace(self, event: Any) -> None:
        trace = event.trace
        self.panel.research_step(event.call_id, trace.kind, trace.step, trace.data)

    async def tool_call_finished(self, event: Any) -> None:
        screen, app = self.screen, self.screen.kbmem
        duration = event.duration_ms if app.show_times else None
        self.panel.tool_call_finished(
            event.call_id, event.name, event.arguments, duration, event.intervals, event.error
        )
        if screen.reply is not None:
            screen.reply.remember_intervals(event.intervals)
        if event.error:
            screen.notify(
                event.error, title=f"{event.name} failed", severity="warning", markup=False
            )
        elif event.intervals:
            question = event.arguments.get("request") or event.arguments.get("query")
            screen.read_excerpts(event.call_id, event.intervals, str(question or ""))
        app.set_status(busy="answering…")

    async def reply_delta(self, event: Any) -> None:
        if self.screen.reply is not None:
            await self.screen.reply.write(event.text)
            self.screen.query_one("#chat-log", FollowScroll).follow()

    async def turn_finished(self, event: Any) -> None:
        screen, app = self.screen, self.screen.kbmem
        screen.running = False
        self.panel.turn_finished()
        app.set_status(busy="")
        if screen.reply is not None:
            status = app.status
            foot = turn_foot(
                status.engine, status.model, event.status, event.duration_ms, app.show_times
            )
            await screen.reply.finish(event.status, event.answer, error=event.error, foot=foot)
        if event.status == "failed":
            screen.notify(
                event.error or "unknown error",
                title="The turn failed",
                severity="error",
                markup=False,
            )
            screen.query_one("#chat-log", FollowScroll).follow()
        app.chat_event(event)

    async def chat_wide(self, event: Any) -> None:
        self.screen.kbmem.chat_event(event)
