"""The conversation: the user's messages (literal text), the agent's replies streamed as
Markdown with their citations made selectable, a message box with history, suggested questions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Markdown, OptionList, Static, TextArea
from textual.widgets.markdown import MarkdownStream
from textual.widgets.option_list import Option

from ..render import CITATION, at_commit, markdown_parser, one_line, plain, safe

CITE_SCHEME = "cite:"


@dataclass(frozen=True)
class Citation:
    """A cited interval: ``page_id`` lines ``start..end`` as read at ``commit`` ("" = HEAD)."""

    page_id: str
    start: int
    end: int
    commit: str = ""
    path: str = ""

    @property
    def label(self) -> str:
        return f"[{self.page_id}:L{self.start}-L{self.end}]"

    @property
    def href(self) -> str:
        return f"{CITE_SCHEME}{self.page_id}:L{self.start}-L{self.end}"

    @classmethod
    def from_href(cls, href: str) -> Citation | None:
        match = CITATION.fullmatch(f"[{href[len(CITE_SCHEME) :]}]")
        if not href.startswith(CITE_SCHEME) or match is None:
            return None
        return cls(match.group(1), int(match.group(2)), int(match.group(3)))


def linkify(markdown: str) -> str:
    """Citations become Markdown links (``cite:`` scheme) that the reply handles itself."""

    def link(m: re.Match[str]) -> str:
        inner = m.group(0)[1:-1]
        return f"[{inner}]({CITE_SCHEME}{inner})"

    return CITATION.sub(link, markdown)


class CitationLinker:
    """Linkifies a streamed reply: text after an unclosed ``[`` is held back until the bracket
    closes (or plainly cannot be a citation), so a citation split across deltas still links."""

    HOLD_LIMIT = 160

    def __init__(self) -> None:
        self.pending = ""

    def feed(self, text: str) -> str:
        self.pending += text
        cut = self.pending.rfind("[")
        open_bracket = cut != -1 and "]" not in self.pending[cut:]
        if open_bracket and len(self.pending) - cut < self.HOLD_LIMIT:
            ready, self.pending = self.pending[:cut], self.pending[cut:]
        else:
            ready, self.pending = self.pending, ""
        if ready.endswith("\r"):  # the next piece says whether it is a CRLF
            ready, self.pending = ready[:-1], "\r" + self.pending
        return linkify(safe(ready))

    def flush(self) -> str:
        ready, self.pending = self.pending, ""
        return linkify(safe(ready))


class UserMessage(Static):
    """What the user asked, shown literally."""

    DEFAULT_CSS = """
    UserMessage {
        margin: 1 0 0 8;
        padding: 0 1;
        background: $primary 20%;
        border-left: wide $primary;
    }
    """

    def __init__(self, text: str):
        super().__init__(plain(text), markup=False)


class AgentReply(Vertical):
    """One reply: a header, the Markdown streamed in place, then a status line and the
    answer's citations as a list (enter or click opens the cited lines)."""

    DEFAULT_CSS = """
    AgentReply { height: auto; margin: 1 0 0 0; border-left: wide $success; padding: 0 0 0 1; }
    AgentReply.-failed { border-left: wide $error; }
    AgentReply > .who { color: $text-muted; }
    AgentReply > Markdown { margin: 0; padding: 0; }
    AgentReply > .foot { color: $text-muted; }
    AgentReply > .error { color: $error; }
    AgentReply > OptionList { height: auto; max-height: 8; border: none; padding: 0; margin: 0; }
    AgentReply > OptionList:focus { border: none; background: $boost; }
    """

    class CitationChosen(Message):
        """The user picked one of the reply's citations."""

        def __init__(self, reply: AgentReply, citation: Citation) -> None:
            super().__init__()
            self.reply = reply
            self.citation = citation

    def __init__(self, who: str):
        super().__init__()
        self.who = who
        self.stream: MarkdownStream | None = None
        self.linker = CitationLinker()
        self.citations: list[Citation] = []
        self.known: dict[tuple[str, int, int], Citation] = {}
        self.finished = False
        self.named = False  # the header names the turn (it said only "thinking…" until then)
        self.deltas = 0  # pieces streamed so far

    def compose(self) -> ComposeResult:
        yield Static(plain(self.who), classes="who")
        yield Markdown(id="reply-markdown", open_links=False, parser_factory=markdown_parser)

    @property
    def markdown(self) -> Markdown:
        return self.query_one(Markdown)

    def name_turn(self, who: str) -> None:
        """The turn started: the header says which turn, and who answers."""
        self.named = True
        self.query_one(".who", Static).update(plain(who))

    def remember_intervals(self, intervals: list[dict[str, Any]]) -> None:
        """Intervals a tool call found: a citation of them opens at their commit."""
        for iv in intervals:
            try:
                c = Citation(
                    str(iv["page_id"]),
                    int(iv["start"]),
                    int(iv["end"]),
                    str(iv.get("commit") or ""),
                    str(iv.get("path") or ""),
                )
            except (KeyError, TypeError, ValueError):
                continue
            self.known.setdefault((c.page_id, c.start, c.end), c)

    def resolve(self, citation: Citation) -> Citation:
        """The citation with the commit it was read at, when a tool call of the turn found
        it (the exact lines, else an interval of the same page that contains them)."""
        exact = self.known.get((citation.page_id, citation.start, citation.end))
        if exact is not None:
            return exact
        for c in self.known.values():
            if c.page_id == citation.page_id and c.start <= citation.start <= citation.end <= c.end:
                return Citation(c.page_id, citation.start, citation.end, c.commit, c.path)
        return citation

    async def write(self, text: str) -> None:
        if self.stream is None:
            self.stream = Markdown.get_stream(self.markdown)
        self.deltas += 1
        await self.stream.write(self.linker.feed(text))

    async def finish(
        self,
        status: str,
        answer: str,
        *,
        error: str | None = None,
        foot: str = "",
        context: list[Any] | None = None,
    ) -> None:
        """The turn ended: flush the stream, show the status and the citations."""
        if self.stream is not None:
            await self.stream.write(self.linker.flush())
            await self.stream.stop()
            self.stream = None
        elif answer:
            await self.markdown.update(linkify(safe(answer)))
        self.finished = True
        if not self.named:
            # The turn never started (refused, or the chat did not open): "thinking…" would
            # stay above the error.
            self.query_one(".who", Static).update(plain(f"kbmem · {status}"))
        for item in context or []:
            self.remember_intervals([item])
        if status == "failed":
            self.add_class("-failed")
        if error:
            await self.mount(Static(plain(f"{status}: {error}"), classes="error"))
        if foot:
            await self.mount(Static(plain(foot), classes="foot"))
        seen: dict[tuple[str, int, int], Citation] = {}
        for m in CITATION.finditer(answer):
            cited = Citation(m.group(1), int(m.group(2)), int(m.group(3)))
            seen.setdefault((cited.page_id, cited.start, cited.end), self.resolve(cited))
        self.citations = list(seen.values())
        if self.citations:
            options = OptionList(
                *[Option(Content(f"↗ {c.label} {at_commit(c.commit, 7)}")) for c in self.citations],
                classes="citations",
            )
            options.border_title = "Sources"
            await self.mount(options)

    @on(OptionList.OptionSelected, ".citations")
    def _citation_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(self.CitationChosen(self, self.citations[event.option_index]))

    @on(Markdown.LinkClicked)
    def _link_clicked(self, event: Markdown.LinkClicked) -> None:
        citation = Citation.from_href(event.href)
        if citation is not None:
            event.stop()
            self.post_message(self.CitationChosen(self, self.resolve(citation)))


class PromptInput(TextArea):
    """The message box: several lines (pastes keep their newlines), growing to a few lines,
    then scrolling. ``enter`` sends; ``ctrl+j`` inserts a new line (a key every terminal sends
    apart from enter; ``shift+enter`` and ``alt+enter`` too where the terminal reports them).
    ↑ on the first line and ↓ on the last walk through what was sent before. ``placeholder``
    gives way to ``short_placeholder`` where the box is too narrow for it (the footer names
    the keys too)."""

    DEFAULT_CSS = """
    PromptInput { height: auto; max-height: 8; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        # Shown in the footer; _on_key does the sending (see there).
        Binding("enter", "submit", "Send"),
        Binding("ctrl+j", "newline", "New line"),
        Binding("shift+enter,alt+enter", "newline", "New line", show=False),
    ]

    class Submitted(Message):
        """The user sent ``text`` (all of its lines)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class DownFromEnd(Message):
        """↓ with nothing further in the history: the screen may move focus below."""

    def __init__(self, short_placeholder: str = "", **kwargs: Any):
        super().__init__(**kwargs)
        self.past: list[str] = []
        self.position: int | None = None
        self.draft = ""
        self.placeholders = (str(self.placeholder), short_placeholder or str(self.placeholder))

    def on_resize(self) -> None:
        full, short = self.placeholders
        fits = cell_len(full) <= self.scrollable_content_region.width
        self.placeholder = full if fits else short

    def remember(self, text: str) -> None:
        if text and (not self.past or self.past[-1] != text):
            self.past.append(text)
        self.position = None
        self.draft = ""

    async def _on_key(self, event: events.Key) -> None:
        # Enter sends, handled here in turn with the keys typed before it. A priority binding
        # ran as the key arrived, ahead of the typed keys still queued for the box: typing
        # fast, or while the app was busy, sent a cut message ("…the tide-window sched").
        if event.key == "enter" and not self.read_only:
            event.stop()
            event.prevent_default()
            self.action_submit()
            return
        await super()._on_key(event)

    def action_submit(self) -> None:
        self.post_message(self.Submitted(self.text))

    def take(self, sent: str) -> None:
        """Remove ``sent`` (what a Submitted carried) from the box, keeping what was typed
        after the enter that sent it: keys queue up while the app is busy, and they are the
        start of the next message. A box edited otherwise since is left alone."""
        if self.text.startswith(sent):
            self.text = self.text[len(sent) :]
            self.move_cursor(self.document.end)

    def action_newline(self) -> None:
        self.replace("\n", *self.selection)

    def action_cursor_up(self, select: bool = False) -> None:
        if select or not self.navigator.is_first_wrapped_line(self.cursor_location):
            super().action_cursor_up(select)
        else:
            self.action_history(-1)

    def action_cursor_down(self, select: bool = False) -> None:
        if select or not self.navigator.is_last_wrapped_line(self.cursor_location):
            super().action_cursor_down(select)
        else:
            self.action_history(1)

    def action_history(self, step: int) -> None:
        if step > 0 and self.position is None:
            self.post_message(self.DownFromEnd())
            return
        if not self.past:
            return
        if self.position is None:
            self.draft = self.text
            self.position = len(self.past)
        self.position += step
        if self.position >= len(self.past):
            self.position = None
            self.text = self.draft
        else:
            self.position = max(0, self.position)
            self.text = self.past[self.position]
        self.move_cursor(self.document.end)


class Suggestions(Vertical):
    """Questions to start with, shown while the chat is empty."""

    DEFAULT_CSS = """
    Suggestions { height: auto; margin: 1 0; padding: 0 1; border: round $accent; }
    Suggestions > .title { text-style: bold; }
    Suggestions > OptionList { height: auto; border: none; padding: 0; }
    Suggestions > .hint { color: $text-muted; }
    """

    class QuestionChosen(Message):
        def __init__(self, question: str) -> None:
            super().__init__()
            self.question = question

    def __init__(self, intro: str, questions: list[str]):
        super().__init__()
        self.intro = intro
        self.questions = questions

    def compose(self) -> ComposeResult:
        yield Static(plain(self.intro), classes="title")
        yield OptionList(*[Option(Content(f"› {q}")) for q in self.questions])
        yield Static("↓ from the message box to choose, enter to ask", classes="hint")

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(self.QuestionChosen(self.questions[event.option_index]))


def suggested_questions(readme: str, titles: list[str], notes: list[str], n: int = 4) -> list[str]:
    """Questions for a first chat: the knowledge base's README may list some (question lines
    under a heading that mentions asking); otherwise ask about its latest sessions and notes."""
    found: list[str] = []
    in_section = False
    for line in readme.splitlines():
        if line.startswith("#"):
            in_section = bool(re.search(r"\bask|question", line, re.IGNORECASE))
            continue
        item = line.strip().lstrip("-*0123456789. ").strip().strip('`"“”')
        if in_section and item.endswith("?"):
            found.append(item)
    if found:
        return found[:n]
    # Short titles ("Q1 retrospective", not the whole "Q1 retrospective - pilot, incident,
    # migration"): the offline agent matches a question's words against the turns.
    short = [re.split(r" - |: ", t, maxsplit=1)[0].strip() for t in titles]
    out = [f"What happened in the {t}?" for t in short[:2]]
    out += [f"What does the note “{t}” say?" for t in notes[:1]]
    if short:
        out.append(f"Who owned the follow-ups of the {short[-1]}?")
    return out[:n]


def turn_foot(agent: str, model: str | None, status: str, duration_ms: float, times: bool) -> str:
    who = agent + (f" · {model}" if model else "")
    when = f" · {duration_ms / 1000:.1f} s" if times else ""
    return f"{who} · {status}{when}"


def short(text: str, limit: int = 80) -> Text:
    return plain(one_line(text, limit))
