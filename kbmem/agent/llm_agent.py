"""The LLM agent: any litellm model, with tool calling and a streamed reply.

A turn runs in rounds. The first round asks the model for a ``research`` call (``tool_choice``
names it, so the model writes the request; servers that constrain output to the tool's schema,
like llama.cpp's, make even a small model manage it). Later rounds offer all four tools with
``tool_choice=auto`` and stream the reply; a tool call mid-answer runs and the model goes on.

Degradation, so that a model without tool calling still answers from memory: when the first
round fails or comes back without a usable tool call, the agent runs ``research`` itself and
asks the model to answer from the briefing. Invalid tool arguments go back to the model as the
tool's result. A stream that dies keeps what came before, marked ``partial``; a model that
fails before saying anything is replaced by the offline answer from the briefing, marked.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kbmem.agent.context import TurnContext
from kbmem.agent.offline import NOTHING, OfflineAgent, markdown_literal
from kbmem.agent.tools import TOOL_SCHEMAS, ToolResult, render_briefing
from kbmem.errors import LLMError, ModelUnreachable
from kbmem.llm.client import ChatStream, LLMConfig, stream_chat
from kbmem.textutil import CITATION, count_tokens, truncate_tokens

MAX_ROUNDS = 4
HISTORY_TURNS = 4
HISTORY_TOKENS = 120
ANSWER_TOKENS = 400
PLAN_TOKENS = 120
CANCEL_POLL_S = 0.1

SYSTEM = """You are kbmem, an assistant with a memory of a team's past conversations and notes.
Answer from memory, not from general knowledge. Tools: research(request) builds a cited
briefing; search(query, tool, k) finds passages; read_page(id, start, end) reads a page;
expand(interval, mode, pad) shows more around a citation. Cite every fact you take from memory
with its citation exactly as given, like [page-id:L12-L18]. Shape of the reply: first ONE short
line that answers the question directly, in the kind it asks for (a name, a place, a date
written like "Saturday 14 March 2026", a duration, a number, a short list, yes/no with the
reason); use the resolved dates the briefing gives for "last Friday", "yesterday" and the like.
Then, on the following lines, the short quotes that support it, each with its citation. If
memory holds nothing on the question, say "Memory does not say." If the evidence is weak, say
so in the first line. Be brief."""

DEGRADED = """Memory research for the question below. Answer it from this briefing only: first
one short line with the direct answer (a name, a place, a date like "Saturday 14 March 2026",
a number, a short list, yes/no with the reason; use the resolved dates given), then the
supporting quotes, each with its citation exactly as given, like [page-id:L12-L18]. If the
briefing holds nothing on the question, say "Memory does not say."

{briefing}"""


@dataclass
class RoundResult:
    """What one streamed model call produced."""

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    cut: bool = False  # the model stopped at the round's token limit, not at its own end
    unreachable: bool = False  # the connection failed or timed out: do not ask again


class LLMAgent:
    name = "llm"

    def __init__(self, config: LLMConfig):
        self.config = config
        self.result_tokens = max(300, min(1800, config.max_prompt_tokens // 3))
        self.plan_tokens = PLAN_TOKENS  # room for the forced research call's arguments
        self.answer_tokens = ANSWER_TOKENS

    # -- the turn ---------------------------------------------------------------------------

    def run(self, ctx: TurnContext) -> None:
        messages = self._messages(ctx)
        briefing_result: ToolResult | None = None
        first = self._round(ctx, messages, tool_choice=_force("research"), stream_text=False)
        ctx.check_cancel()
        if first.tool_calls:
            ctx.note(f"The model asked for {len(first.tool_calls)} tool call(s).")
            briefing_result = self._run_calls(ctx, messages, first)
        if not any(call.error is None for call in ctx.tool_calls):
            if first.unreachable:
                ctx.note(f"The model could not be reached: {first.error}")
                ctx.notice(
                    "The model could not be reached; kbmem researched the question itself "
                    "and answers offline from the briefing.",
                    level="warning",
                )
            else:
                if first.tool_calls:
                    why = "its tool calls failed"
                else:
                    why = _short(first.error or "it answered without calling a tool")
                ctx.note(f"The model did not research memory: {first.error or why}")
                ctx.notice(
                    f"The model did not research memory ({why}); kbmem researched the "
                    "question itself and asks the model to answer from the briefing.",
                    level="warning",
                )
            briefing_result = ctx.tools.call(
                ctx, "research", {"request": ctx.message}, origin="agent"
            )
            ctx.check_cancel()
            if first.unreachable:  # asking again would wait out the same timeout
                self._stream_died(ctx, first, briefing_result)
                self._mark_cited(ctx)
                return
            degraded = self._degraded_message(ctx, briefing_result)
            if first.tool_calls:
                messages.append(degraded)
            else:
                messages = [*messages[:-1], degraded]
        for round_no in range(2, MAX_ROUNDS + 2):
            last = round_no > MAX_ROUNDS
            result = self._round(ctx, messages, tool_choice=None if last else "auto")
            if result.error is not None:
                self._stream_died(ctx, result, briefing_result)
                break
            if result.tool_calls and not last:
                found = self._run_calls(ctx, messages, result)
                briefing_result = found or briefing_result
                continue
            if not result.text.strip():
                ctx.note("The model's answer was empty; answering offline from the briefing.")
                self._offline_answer(ctx, briefing_result, "the model's answer was empty")
            elif result.cut:
                # Said, or the answer just stops mid-sentence and reads as complete.
                limit = f"the answer reached its limit of {self.answer_tokens} tokens"
                ctx.note(f"The model's answer was cut: {limit}.")
                ctx.reply(("\n" if ctx.answer.endswith("\n") else "\n\n") + f"[cut: {limit}]")
            break
        self._mark_cited(ctx)

    # -- model calls ------------------------------------------------------------------------

    def _round(
        self,
        ctx: TurnContext,
        messages: list[dict[str, Any]],
        tool_choice: str | dict[str, Any] | None,
        stream_text: bool = True,
    ) -> RoundResult:
        """One streamed call. Text is streamed to the user as it comes (unless
        ``stream_text`` is off); tool-call fragments are put together by their index."""
        result = RoundResult()
        calls: dict[int, dict[str, Any]] = {}
        tools = TOOL_SCHEMAS if tool_choice is not None else None
        stream = stream_chat(
            self.config,
            messages,
            tools=tools,
            tool_choice=tool_choice,
            max_tokens=self.answer_tokens if stream_text else self.plan_tokens,
        )
        try:
            for chunk in _cancellable(stream, ctx):
                choices = getattr(chunk, "choices", None) or []
                if not choices:
                    continue
                if getattr(choices[0], "finish_reason", None) == "length":
                    result.cut = True
                delta = choices[0].delta
                text = getattr(delta, "content", None)
                if text:
                    result.text += text
                    if stream_text:
                        ctx.reply(text)
                for call in getattr(delta, "tool_calls", None) or []:
                    index = getattr(call, "index", None) or 0
                    slot = calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
                    if getattr(call, "id", None):
                        slot["id"] = call.id
                    function = getattr(call, "function", None)
                    if function is not None:
                        if getattr(function, "name", None):
                            slot["name"] = function.name
                        if getattr(function, "arguments", None):
                            slot["arguments"] += function.arguments
        except LLMError as exc:
            result.error = str(exc)
            result.unreachable = isinstance(exc, ModelUnreachable)
        result.tool_calls = [calls[i] for i in sorted(calls) if calls[i]["name"]]
        return result

    def _run_calls(
        self, ctx: TurnContext, messages: list[dict[str, Any]], result: RoundResult
    ) -> ToolResult | None:
        """Run the round's tool calls and add them and their results to the conversation;
        returns the last research result, if any."""
        assistant: dict[str, Any] = {"role": "assistant", "content": result.text or ""}
        assistant["tool_calls"] = []
        replies = []
        found = None
        for n, call in enumerate(result.tool_calls):
            call_id = call["id"] or f"call_{ctx.turn}_{len(ctx.tool_calls) + 1}_{n}"
            assistant["tool_calls"].append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call["name"], "arguments": call["arguments"] or "{}"},
                }
            )
            tool_result = ctx.tools.call(ctx, call["name"], call["arguments"], origin="model")
            ctx.check_cancel()
            if tool_result.briefing is not None:
                found = tool_result
            for item in tool_result.items:
                ctx.add_context(item)
            text = truncate_tokens(tool_result.text, self.result_tokens)
            replies.append({"role": "tool", "tool_call_id": call_id, "content": text})
            outcome = f"failed: {tool_result.error}" if tool_result.error else "ran"
            ctx.note(f"Tool {call['name']} {outcome}.")
        messages.append(assistant)
        messages.extend(replies)
        return found

    # -- prompts ----------------------------------------------------------------------------

    def _history(self, ctx: TurnContext) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for _turn, question, answer in ctx.history[-HISTORY_TURNS:]:
            out.append({"role": "user", "content": truncate_tokens(question, HISTORY_TOKENS)})
            out.append({"role": "assistant", "content": truncate_tokens(answer, HISTORY_TOKENS)})
        return out

    def _messages(self, ctx: TurnContext) -> list[dict[str, Any]]:
        return [
            {"role": "system", "content": SYSTEM},
            *self._history(ctx),
            {"role": "user", "content": ctx.message},
        ]

    def _degraded_message(self, ctx: TurnContext, research: ToolResult) -> dict[str, Any]:
        """The question again, with the briefing the agent made for it."""
        for item in research.items:
            ctx.add_context(item)
        if research.briefing is not None:
            briefing = render_briefing(research.briefing, self.result_tokens)
        else:
            briefing = f"(research failed: {research.error})"
        budget = self.config.max_prompt_tokens - count_tokens(SYSTEM) - self.answer_tokens
        content = truncate_tokens(DEGRADED.format(briefing=briefing), max(200, budget))
        return {"role": "user", "content": content + f"\n\nQuestion: {ctx.message}"}

    # -- failures ---------------------------------------------------------------------------

    def _stream_died(
        self, ctx: TurnContext, result: RoundResult, research: ToolResult | None
    ) -> None:
        reason = (
            "the model could not be reached"
            if result.unreachable and not result.text
            else "the model's stream ended early"
        )
        error = f"{reason}: {result.error}"
        if result.text.strip():
            ctx.mark("partial", error, shown=reason)
            return
        ctx.note(f"Answering offline from the briefing: {error}")
        self._offline_answer(ctx, research, reason)
        ctx.status, ctx.error = "partial", error

    def _offline_answer(self, ctx: TurnContext, research: ToolResult | None, why: str) -> None:
        """Answer as the offline agent would, from the briefing already made."""
        if ctx.answer:
            ctx.reply("\n\n")
        if research is None or research.briefing is None:
            ctx.reply(f"[{why}; no briefing to answer from]")
            return
        ctx.reply(f"[{why}; answering offline from the briefing]\n")
        agent = OfflineAgent()
        chosen = agent.select(ctx, research.briefing)
        if not chosen:
            ctx.reply(NOTHING)
            return
        # The offline reply's shape: the direct answer the researcher took from the
        # evidence first, then the quotes it stands on.
        direct = research.briefing.answer
        if direct is not None and direct.sources:
            ctx.reply(markdown_literal(direct.line) + "\n\n")
        for sentence in chosen:
            who = f"{sentence.speaker}: " if sentence.speaker else ""
            ctx.reply(
                f"- {who}{sentence.text} "
                f"[{sentence.item.page_id}:L{sentence.start}-L{sentence.end}]\n"
            )

    @staticmethod
    def _mark_cited(ctx: TurnContext) -> None:
        """Mark the context intervals that the answer's citations point into."""
        for m in CITATION.finditer(ctx.answer):
            page_id, start, end = m.group(1), int(m.group(2)), int(m.group(3))
            for item in ctx.context:
                if item.page_id == page_id and item.start <= end and start <= item.end:
                    item.cited = True


def _short(error: str, limit: int = 120) -> str:
    """A provider's error cut for a notice (its whole text goes to the turn's reasoning)."""
    text = " ".join(error.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _force(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


_END = object()


def _cancellable(stream: ChatStream, ctx: TurnContext) -> Iterator[Any]:
    """The stream's chunks, read by a helper thread, so that a cancel stops the turn at once:
    no chunk arrives while the model reads its prompt, which takes a local model seconds to
    minutes, and the escape key or quitting the TUI waited for all of it. Leaving (a cancel,
    or any other end) closes the stream: its connection is shut down, which wakes the helper
    thread and tells the server to stop, so the next turn does not wait behind a stopped one
    (a llama.cpp server still finishes reading a prompt it has started on)."""
    chunks: queue.Queue[Any] = queue.Queue()

    def pump() -> None:
        try:
            for chunk in stream:
                chunks.put(chunk)
        except BaseException as exc:  # re-raised in the turn's thread
            chunks.put(exc)
        finally:
            chunks.put(_END)

    threading.Thread(target=pump, name=f"kbmem-stream-{ctx.turn}", daemon=True).start()
    try:
        while True:
            try:
                item = chunks.get(timeout=CANCEL_POLL_S)
            except queue.Empty:
                ctx.check_cancel()
                continue
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            ctx.check_cancel()
            yield item
    finally:
        stream.close()
