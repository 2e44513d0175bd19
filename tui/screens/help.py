"""The help screen: what each screen shows, its keys, and the command palette's commands."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

from ..widgets.footer import KbmemFooter

HELP = """\
# kbmem — help

kbmem is a git-backed memory. Every page is a markdown file in a git repository; every chat
turn's tool calls and cited intervals are committed there too, so any answer can be audited.

## Screens

- `F2` **Chat**: ask about what the memory holds. The reply streams in; the side panel fills
  live with the research trace: the plan, one box per tool call (arguments, status, duration,
  hits as `page:lines` with an excerpt), then the briefing.
- `F3` **History**: pages by tenant, session and notes; a page's front matter and content; its
  versions from git; the diff between any two versions; the page as it was at any commit.
- `F4` **Audit**: every turn of every chat: the reasoning, the tool calls, every interval the
  turn read, the ones the answer cites first (resolved at their commit, the lines
  highlighted), and the answer.

## Chat

- `enter` sends; `ctrl+j` starts a new line (so do `shift+enter` and `alt+enter` where the
  terminal reports them). A pasted paragraph or list keeps its lines.
- `↑` on the first line and `↓` on the last walk through what you asked before. On an empty
  chat, `↓` from the message box reaches the suggested questions (a knowledge base's README may
  list them under a heading about questions to ask); `enter` asks one.
- `escape` stops a running turn: what it did so far is kept, marked *interrupted*.
- `ctrl+t` shows or hides the trace panel; `ctrl+o` opens the citations of the last answer.
- Citations look like `[page-id:L12-L18]`: click one, or press `ctrl+o` and choose one, to read
  those lines as they were at the commit the answer used.
- `ctrl+n` starts a new chat (the current one's pending turns are committed first).

## History

`p` page · `s` source (line numbers) · `v` versions: the one under the cursor is given in
full below them (its whole commit id and message) · `enter` on a version shows it ·
`home`/`end` go to the newest/oldest version · `m` marks a version as the diff base · `d`
diffs the base (or the previous version) against the version under the cursor · `g` shows the
page at any commit you type · `f5` reads the page tree again (after a commit made elsewhere).
A version too big to lay out quickly (over 100,000 characters) shows its beginning, or the
lines around a citation, and names the command that prints it whole.

## Audit

Choose a turn in the list. `enter` on an interval (or `o`) opens the page at that commit, on
the History screen, with the cited lines highlighted. `c` commits pending turns now.

## Command palette (`ctrl+p`)

- **chat: new**: start a new chat
- **kb: reindex**: bring the tenant's index up to the latest commit
- **kb: commit now**: commit the pending turns without waiting for the batch
- **view: chat**, **view: history**, **view: audit**: switch screens
- **engine: choose model**: the offline agent or a litellm model (e.g. `ollama/llama3`)
- **app: help**: this screen

## Status bar

Knowledge base · tenant · engine and model · the commit the index reflects (or *syncing*, or
*N behind* when newer commits are not indexed yet: answers may miss them until the next
question syncs it) · whether the embedding model has loaded · turns pending until the next
batch commit.

Failures never close the app: they show as a notification in the corner. `ctrl+q` quits,
after committing the pending turns.
Press `escape` or `F1` to close this help.
"""


class HelpScreen(ModalScreen[None]):
    """Keys and commands, in one place."""

    CSS_PATH = "help.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("f1", "dismiss", "Close", show=False),
        Binding("q", "dismiss", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-scroll"):
            yield Markdown(HELP, id="help-text")
        # Its own footer, over the screen below's (whose keys do not apply here).
        yield KbmemFooter()
