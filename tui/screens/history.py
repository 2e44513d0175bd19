"""The History screen: a tree of pages (by tenant, session and notes), a page viewer (front
matter as a table, content rendered, the raw file with line numbers), the page's versions from
git, the diff between any two versions, and the page as it was at any commit."""

from __future__ import annotations

from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Markdown, Static, TabbedContent, TabPane, Tree
from textual.worker import Worker, get_current_worker

from kbmem.store.repository import CommitInfo

from ..history_data import (
    Entry,
    Listing,
    Shown,
    read_version,
    size_text,
    tree_listing,
    version_details,
    version_title,
    window,
)
from ..render import markdown_parser, safe, short_sha
from ..widgets.diff_view import DiffView
from ..widgets.footer import KbmemFooter
from ..widgets.page_tree import PageTree
from ..widgets.page_versions import FrontMatter, VersionTable
from ..widgets.source_view import SourceView
from ..widgets.status_bar import StatusBar
from .base import KbmemScreen
from .prompt import PromptScreen


class HistoryScreen(KbmemScreen):
    """Browse pages and their history in git."""

    CSS_PATH = "history.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "tab('page')", "Page"),
        Binding("s", "tab('source')", "Source"),
        Binding("v", "tab('versions')", "Versions"),
        Binding("m", "mark", "Mark"),
        Binding("d", "diff", "Diff"),
        Binding("g", "goto", "At rev"),
        Binding("f5", "reload", "Reload", show=False),
    ]

    class TreeRead(Message):
        """The tree's listing at ``head``, read by a worker."""

        def __init__(self, head: str | None, listing: Listing) -> None:
            super().__init__()
            self.head = head
            self.listing = listing

    class VersionRead(Message):
        """A version of a file and the file's history, read by ``worker``."""

        def __init__(
            self,
            shown: Shown,
            versions: list[CommitInfo],
            lines: tuple[int, int] | None,
            worker: Worker[None],
        ) -> None:
            super().__init__()
            self.shown = shown
            self.versions = versions
            self.lines = lines
            self.worker = worker

    def __init__(self) -> None:
        super().__init__()
        self.shown: Shown | None = None
        self.versions: list[CommitInfo] = []
        self.marked: str | None = None
        self.head_seen: str | None = None
        self.shown_latest = True
        self.shown_lines: tuple[int, int] | None = None
        # The last page history read from git, as (path, HEAD then, versions): choosing
        # another version of the same page need not read it again.
        self.read_history: tuple[str, str | None, list[CommitInfo]] | None = None

    def compose(self) -> ComposeResult:
        yield StatusBar()
        with Horizontal(id="history-body"):
            yield PageTree(id="page-tree")
            with Vertical(id="page-pane"):
                yield Static("Choose a page in the tree.", id="page-title", markup=False)
                with TabbedContent(id="page-tabs", initial="page"):
                    with TabPane("Page", id="page"), VerticalScroll(id="page-scroll"):
                        yield Static("", id="page-note", classes="cut-note", markup=False)
                        yield FrontMatter(id="front-matter", show_cursor=False, zebra_stripes=True)
                        yield Markdown(
                            id="page-body", open_links=False, parser_factory=markdown_parser
                        )
                    with TabPane("Source", id="source"):
                        yield SourceView(id="source-scroll")
                    with TabPane("Versions", id="versions"):
                        yield VersionTable(
                            id="version-table", cursor_type="row", zebra_stripes=True
                        )
                        # Not focusable: the keys stay with the table (and focus never
                        # pulls the Versions tab back in front of the Diff tab).
                        with VerticalScroll(id="version-detail-scroll", can_focus=False):
                            yield Static("", id="version-detail", markup=False)
                        yield Static(
                            "enter: show this version · m: mark as diff base · "
                            "d: diff base → this version · g: the page at any commit · "
                            "home/end: newest/oldest",
                            id="versions-help",
                            markup=False,
                        )
                    with TabPane("Diff", id="diff"):
                        yield DiffView(id="diff-scroll")
        yield KbmemFooter()

    def on_mount(self) -> None:
        self.query_one(FrontMatter).display = False
        self.query_one("#page-note", Static).display = False
        self.load_tree()

    def on_screen_resume(self) -> None:
        # Pages may have been committed (a chat batch) since this screen was last shown.
        if self.head_seen is not None and self.workspace.kb.head() != self.head_seen:
            self.load_tree()

    # -- the tree ---------------------------------------------------------------------------

    @work(thread=True, exit_on_error=False, group="history-tree", exclusive=True)
    def load_tree(self) -> None:
        self.post_message(self.TreeRead(*tree_listing(self.workspace)))

    @on(TreeRead)
    def _fill_tree(self, message: TreeRead) -> None:
        self.head_seen = message.head
        self.query_one(PageTree).fill(message.listing)
        if self.shown is not None and not self._loading():
            # Refresh the versions; a page shown at an older commit stays at that commit.
            rev = "HEAD" if self.shown_latest else self.shown.commit
            self.load_file(self.shown.entry, rev, self.shown_lines)

    def _loading(self) -> bool:
        return any(w.group == "history-page" and w.is_running for w in self.workers)

    @on(Tree.NodeSelected, "#page-tree")
    def _node_selected(self, event: Tree.NodeSelected[Entry]) -> None:
        if event.node.data is not None:
            self.marked = None
            self.load_file(event.node.data)

    # -- one file ---------------------------------------------------------------------------

    def show_page(
        self,
        page_id: str,
        rev: str = "HEAD",
        lines: tuple[int, int] | None = None,
        tenant: str | None = None,
    ) -> None:
        """Open ``page_id`` as it was at ``rev``; with ``lines``, on the Source tab with those
        lines highlighted (how the Audit screen and citations jump here)."""
        store = self.workspace.store(tenant)
        self.marked = None
        self.load_file(Entry(store.tenant, store.path_of(page_id), page_id), rev, lines)

    @work(thread=True, exit_on_error=False, group="history-page", exclusive=True)
    def load_file(
        self, entry: Entry, rev: str = "HEAD", lines: tuple[int, int] | None = None
    ) -> None:
        worker = get_current_worker()
        self.workspace.check_available()
        commit = self.workspace.kb.resolve(rev)
        versions = self._versions(entry)
        shown = read_version(self.workspace, entry, commit, versions)
        self.post_message(self.VersionRead(shown, versions, lines, worker))

    def _versions(self, entry: Entry) -> list[CommitInfo]:
        """The file's history (from a worker): read from git once per page and HEAD."""
        head = self.workspace.kb.head()
        kept = self.read_history
        if kept is not None and kept[:2] == (entry.path, head):
            return kept[2]
        versions = self.workspace.store(entry.tenant).versions(entry.path)
        self.read_history = (entry.path, head, versions)
        return versions

    @on(VersionRead)
    async def _show(self, message: VersionRead) -> None:
        if message.worker.is_cancelled:
            return  # another page or version was chosen since: that one is shown
        shown, versions, lines = message.shown, message.versions, message.lines
        at_head = shown.commit == self.workspace.kb.head()
        self.shown_latest = not versions or at_head
        title = version_title(shown, versions, at_head)
        self.query_one("#page-title", Static).update(title)
        self._fill_front_matter(shown)
        print_it = f"The whole of it: {shown.entry.print_command(shown.commit)}"
        await self._show_page(shown, print_it)
        await self.query_one(SourceView).show(shown, lines, print_it)
        # Only now is the new version on screen (``shown`` is what tests and actions see).
        self.shown = shown
        self.versions = versions
        self.shown_lines = lines
        self._fill_versions()
        tabs = self.query_one(TabbedContent)
        if lines:
            tabs.active = "source"
        elif tabs.active == "diff":
            tabs.active = "page"
        self.refresh_bindings()
        if shown.problem:
            # On the Versions tab the front matter's problem row is out of sight.
            self.notify(
                f"{shown.problem}. The Source tab shows the file as committed.",
                title="This version's header cannot be read",
                severity="warning",
                timeout=8,
                markup=False,
            )

    async def _show_page(self, shown: Shown, print_it: str) -> None:
        """The Page tab: the content rendered (only its beginning, if huge, with a note)."""
        body = window(shown.body)
        note = self.query_one("#page-note", Static)
        note.display = not body.whole
        if not body.whole:
            note.update(
                f"Only the beginning of this version is shown: it is "
                f"{size_text(len(shown.body))} ({body.total:,} lines). {print_it}"
            )
        await self.query_one("#page-body", Markdown).update(safe(body.text))

    def _fill_front_matter(self, shown: Shown) -> None:
        pane = self.query_one("#page-pane").size.width or 80
        self.query_one(FrontMatter).show(shown, pane)

    def on_resize(self) -> None:
        if self.shown is not None:
            self._fill_front_matter(self.shown)

    def _fill_versions(self) -> None:
        shown = self.shown.version if self.shown else None
        self.query_one(VersionTable).fill(self.versions, shown, self.marked)

    @on(DataTable.RowHighlighted, "#version-table")
    def _version_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The version under the cursor, in full below the table: its whole commit id and
        its whole message (the table shows a short id and the subject only)."""
        chosen = self.query_one(VersionTable).version(event.row_key.value)
        detail = self.query_one("#version-detail", Static)
        detail.update(version_details(chosen) if chosen is not None else "")
        self.query_one("#version-detail-scroll", VerticalScroll).scroll_home(animate=False)

    @on(DataTable.RowSelected, "#version-table")
    def _version_chosen(self, event: DataTable.RowSelected) -> None:
        if self.shown is not None and event.row_key.value:
            self.load_file(self.shown.entry, event.row_key.value)

    # -- actions ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("mark", "goto", "tab") and self.shown is None:
            return None if action != "tab" else True
        if action == "diff" and (self.shown is None or len(self.versions) < 2):
            return None
        return True

    def action_tab(self, name: str) -> None:
        self.query_one(TabbedContent).active = name
        focus = {"page": "#page-scroll", "source": "#source-scroll", "versions": "#version-table"}
        if name in focus:
            self.query_one(focus[name]).focus()

    def action_reload(self) -> None:
        self.load_tree()

    def action_mark(self) -> None:
        table = self.query_one(VersionTable)
        sha = table.cursor_sha()
        if sha is None:
            self.query_one(TabbedContent).active = "versions"
            return
        self.marked = None if self.marked == sha else sha
        row = table.cursor_row
        self._fill_versions()
        table.move_cursor(row=row, animate=False)
        if self.marked:
            self.notify(f"Diff base: {short_sha(sha)}", markup=False, timeout=2)

    def action_diff(self) -> None:
        """Diff the marked version (or the one before) against the version under the cursor
        (or the one shown)."""
        if self.shown is None or len(self.versions) < 2:
            return
        shas = [c.sha for c in self.versions]
        tabs = self.query_one(TabbedContent)
        new = self.query_one(VersionTable).cursor_sha() if tabs.active == "versions" else None
        new = new or (self.shown.version if self.shown.version in shas else shas[0])
        old = self.marked
        if old is None or old == new:
            index = shas.index(new)
            old = shas[index + 1] if index + 1 < len(shas) else shas[index - 1]
        # Older first, so that the diff reads forward in time.
        if shas.index(old) < shas.index(new):
            old, new = new, old
        self.show_diff(old, new)

    def show_diff(self, old: str, new: str) -> None:
        if self.shown is not None:
            self.query_one(TabbedContent).active = "diff"
            diff = self.query_one(DiffView)
            diff.show(self.workspace.kb, self.shown.entry, old, new, self.versions)

    def action_goto(self) -> None:
        if self.shown is None:
            return
        entry = self.shown.entry

        def chosen(rev: str | None) -> None:
            if rev:
                self.load_file(entry, rev.strip())

        self.app.push_screen(
            PromptScreen(
                f"Show {entry.name} as it was at commit (id, tag, HEAD~3, …):",
                placeholder="revision",
            ),
            chosen,
        )
