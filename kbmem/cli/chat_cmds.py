"""Chat and provenance commands: chat (the TUI, or a line-per-message script with --no-tui),
turns, audit, and ask (one-shot research)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbmem.cli import Commands
from kbmem.cli.sync_cmds import finish_background_sync, start_background_sync
from kbmem.errors import KbmemError, ValidationError
from kbmem.interfaces.service import turn_reply_dict, turn_summary_dict
from kbmem.textutil import SURROGATE, MarkdownTextStream, PrintableStream, json_text, printable

if TYPE_CHECKING:
    from kbmem.agent.events import AgentEvent
    from kbmem.agent.session import ChatSession


def register(sub: Commands) -> None:
    p = sub.add_parser(
        "chat",
        help="chat with the memory (the TUI; --no-tui reads one message per line from stdin)",
    )
    p.add_argument("--no-tui", action="store_true", help="no terminal UI: stdin in, stdout out")
    p.add_argument("--model", help="litellm model for the LLM agent (default: $KBMEM_MODEL)")
    p.add_argument("--chat", dest="chat_id", help="continue this chat (default: a new one)")
    p.add_argument(
        "--json",
        action="store_true",
        help="with --no-tui: print one JSON object per turn instead of the answer",
    )
    p.set_defaults(handler=cmd_chat)

    p = sub.add_parser("turns", help="list chat turns (committed, and pending in the journal)")
    p.add_argument("chat", nargs="?", help="only this chat")
    p.add_argument("--json", action="store_true")
    p.add_argument("--limit", type=int, default=None, help="at most this many turns (default all)")
    p.add_argument("--offset", type=int, default=0, help="skip this many turns first")
    p.set_defaults(handler=cmd_turns)

    p = sub.add_parser("audit", help="what a turn's answer rested on, read at its commits")
    p.add_argument("turn", nargs="?", help="<chat-id>/<n>")
    p.add_argument("--last", action="store_true", help="the most recent turn")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_audit)

    p = sub.add_parser("ask", help="one-shot research: a cited briefing for a request")
    p.add_argument("request")
    p.add_argument("--json", action="store_true", help="print the briefing as JSON")
    p.add_argument("--engine", choices=("offline", "llm"), default=None)
    p.add_argument("--model", help="litellm model for --engine llm")
    p.add_argument("--max-pages", type=int, default=None)
    p.add_argument("--depth", type=int, default=None, help="reflection depth")
    p.add_argument("--trace", action="store_true", help="print the research steps to stderr")
    p.set_defaults(handler=cmd_ask)


# -- chat -----------------------------------------------------------------------------------


def cmd_chat(ctx: Any, args: argparse.Namespace) -> int:
    if not args.no_tui:
        if args.json:
            raise ValidationError("--json needs --no-tui", "--json")
        try:
            from kbmem_tui.app import run_app
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.split(".")[0] in ("tui", "textual"):
                print(
                    f"kbmem: the terminal UI is not available ({exc.name} is missing); "
                    "use 'kbmem chat --no-tui'",
                    file=sys.stderr,
                )
                return 2
            raise
        _log_to_file(ctx.kb.state_dir / "kbmem.log")
        run_app(kb=ctx.kb, tenant=ctx.tenant, model=args.model)
        return 0
    return _chat_lines(ctx, args)


def _log_to_file(path: Path) -> None:
    """While the TUI owns the terminal, log lines written to stderr would be drawn over it:
    send them to ``.kbmem/kbmem.log`` instead."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)


def _chat_lines(ctx: Any, args: argparse.Namespace) -> int:
    from kbmem.agent.batch import turn_span
    from kbmem.agent.events import BatchCommitted, Notice, ReplyDelta
    from kbmem.agent.session import ChatSession

    streaming = not args.json
    # The answer streams in pieces, as Markdown: written as the plain text it reads as (no
    # backslash escapes), made printable as a whole, so a CRLF cut in two is kept.
    answer = MarkdownTextStream(PrintableStream(sys.stdout))

    def on_event(event: AgentEvent) -> None:
        if isinstance(event, ReplyDelta) and streaming:
            answer.write(event.text)
        elif isinstance(event, Notice):
            print(f"kbmem: {printable(event.message)}", file=sys.stderr)
        elif isinstance(event, BatchCommitted):
            what = ("recovered " if event.recovered else "") + turn_span(event.first, event.last)
            print(
                f"kbmem: committed chat {event.chat_id} {what} ({event.commit[:10]})",
                file=sys.stderr,
            )

    if hasattr(sys.stdin, "reconfigure"):
        # Bytes that are not UTF-8 become lone surrogates, refused below with the line's
        # number (strict decoding would fail the whole read, at no particular line).
        sys.stdin.reconfigure(errors="surrogateescape")
    chat = ChatSession(ctx.kb, ctx.tenant, args.model, args.chat_id, on_event=on_event)
    print(f"kbmem: chat {chat.chat_id} ({chat.agent_name} agent)", file=sys.stderr)
    syncing = start_background_sync(ctx.kb)  # None: no remote, or sync off
    try:
        return _chat_loop(chat, args, answer, on_event)
    finally:
        finish_background_sync(syncing)


def _chat_loop(
    chat: ChatSession,
    args: argparse.Namespace,
    answer: MarkdownTextStream,
    on_event: Callable[[AgentEvent], None],
) -> int:
    """Answer stdin's lines one by one, committing the chat at the end (or at Ctrl-C)."""
    try:
        for number, line in enumerate(sys.stdin, start=1):
            message = line.strip()
            if not message:
                continue
            try:
                if SURROGATE.search(message):
                    raise ValidationError("is not UTF-8 text", "message")
                record = chat.send(message, on_event)
            except ValidationError as exc:
                if exc.field != "message":
                    raise
                # The turns answered so far are kept and committed, as at the end of input.
                answer.end()
                chat.close()
                raise ValidationError(exc.problem, f"stdin line {number}") from exc
            answer.end()
            if args.json:
                print(json_text(turn_reply_dict(record)))
            else:
                print("\n")
            sys.stdout.flush()
    except KeyboardInterrupt:
        answer.end()
        print("\nkbmem: interrupted; committing the chat's turns", file=sys.stderr)
        chat.close()
        return 130
    chat.close()
    return 0


# -- turns and audit ------------------------------------------------------------------------


def cmd_turns(ctx: Any, args: argparse.Namespace) -> int:
    from kbmem.agent.provenance import iso, list_turns

    if args.limit is not None and args.limit < 1:
        raise ValidationError("must be a positive number", "--limit")
    if args.offset < 0:
        raise ValidationError("must not be negative", "--offset")
    listed = list_turns(ctx.kb, ctx.reading_tenant, args.chat, args.limit, args.offset)
    turns = listed.turns
    if listed.next_offset is not None:
        # Only with --limit: say how to read on, beside the listing, never in it.
        print(
            f"kbmem: turns {args.offset + 1}-{listed.next_offset} of {listed.total}; "
            f"--offset {listed.next_offset} reads on",
            file=sys.stderr,
        )
    if args.json:
        print(json_text([turn_summary_dict(t) for t in turns], indent=1))
        return 0
    if not turns:
        print("no turns" if not listed.total else f"no turns past {listed.total}", file=sys.stderr)
    for t in turns:
        question = " ".join(t.question.split())
        if len(question) > 80:
            question = question[:77] + "..."
        problem = " ".join((t.problem or "").split())  # YAML errors span lines
        note = f"  ({problem})" if problem else "" if t.committed else "  (pending)"
        print(printable(f"{t.turn_id}\t{iso(t.started_at)[:19]}\t{t.status}\t{question}{note}"))
    return 0


def cmd_audit(ctx: Any, args: argparse.Namespace) -> int:
    from kbmem.agent.provenance import audit_turn, last_turn, parse_turn_id, render_audit

    if args.last and args.turn:
        raise ValidationError("name a turn (<chat-id>/<n>) or give --last, not both", "TURN")
    if not args.last and not args.turn:
        raise ValidationError("give a turn id like <chat-id>/<n>, or --last", "TURN")
    chat_id, turn = last_turn(ctx.kb, ctx.tenant) if args.last else parse_turn_id(args.turn)
    audit = audit_turn(ctx.kb, ctx.tenant, chat_id, turn)
    if args.json:
        print(json_text(audit.to_dict(), indent=1))
    else:
        sys.stdout.write(printable(render_audit(audit)))
    return 0


# -- ask ------------------------------------------------------------------------------------


def cmd_ask(ctx: Any, args: argparse.Namespace) -> int:
    from kbmem.research.researcher import Researcher

    kb = ctx.kb
    researcher = Researcher(kb, ctx.reading_tenant)
    engine = args.engine or kb.settings.section("research")["engine"]
    if engine == "llm":
        try:
            from kbmem.research.llm_engine import make_llm_engine
        except ImportError as exc:
            raise KbmemError(f"the LLM research engine is not available ({exc})") from exc
        researcher.engine = make_llm_engine(kb.settings, args.model)(researcher)

    def on_event(event: Any) -> None:
        print(json_text(event.to_dict()), file=sys.stderr)

    try:
        briefing = researcher.research(
            args.request,
            max_pages=args.max_pages,
            max_depth=args.depth,
            on_event=on_event if args.trace else None,
        )
    finally:
        researcher.close()
    if args.json:
        print(json_text(briefing.to_dict(), indent=1))
        return 0
    sys.stdout.write(printable(render_briefing_text(briefing)))
    return 0


def render_briefing_text(briefing: Any) -> str:
    """A briefing for people: summary, facts, open questions, cited evidence."""
    out = [f"Briefing: {briefing.request}", "", briefing.executive_summary]
    if briefing.shown_facts():
        out += ["", "Key facts:"] + [f"  - {f}" for f in briefing.shown_facts()]
    if briefing.open_questions:
        out += ["", "Open questions:"] + [f"  - {q}" for q in briefing.open_questions]
    out += ["", "Evidence:"]
    if not briefing.evidence:
        out.append("  none: memory holds nothing that matches this request")
    for e in briefing.evidence:
        out.append(
            f"  {e.interval.citation()} @ {e.interval.commit[:10]} "
            f"({e.retriever_type}, {e.relevance_score:.4f})"
        )
        out += [f"    | {line}" for line in e.excerpt.rstrip("\n").split("\n")]
    fallbacks = [e for e in briefing.trace or [] if e.kind == "fallback"]
    if fallbacks:  # the model's steps that the offline engine did instead, and the first reason
        stages = ", ".join(dict.fromkeys(e.data.get("stage", "?") for e in fallbacks))
        out += ["", f"Offline instead of the model for: {stages} ({fallbacks[0].data['error']})"]
    out += [
        "",
        f"{briefing.tokens_used} tokens, {len(briefing.pages_used)} page(s), "
        f"{briefing.reflection_steps} reflection step(s), engine {briefing.engine}"
        + (", partial" if briefing.partial else ""),
    ]
    return "\n".join(out) + "\n"
