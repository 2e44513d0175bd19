"""What the History screen shows, read and laid out off the UI thread: a file's entry and the
version on screen, the window of a huge text that is shown, the tree's listing, a version's
title and details, a diff with its header. No Textual here."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from rich.console import Group
from rich.text import Text

from kbmem.errors import KbmemError, NotFound
from kbmem.store.pages import parse_page
from kbmem.store.pagestore import path_at
from kbmem.store.repository import CommitInfo

from .render import DiffText, plain, safe, short_sha, split_lines
from .workspace import Workspace

# A version is shown whole up to this many characters, and a window of its lines beyond that:
# text is laid out on the UI's own thread, and a 5 MB page took 13 s as Markdown and 24 s as
# numbered lines (again at every resize), with the screen frozen meanwhile.
SHOWN_CHARS = 100_000
# Lines shown before the first highlighted line when only a window of a file is shown.
WINDOW_CONTEXT = 20


@dataclass(frozen=True)
class Window:
    """The part of a text that is shown: its lines from line ``first``."""

    first: int
    text: str
    total: int  # the lines of the whole text
    whole: bool

    @property
    def last(self) -> int:
        return self.first + len(split_lines(self.text)) - 1


def window(text: str, around: int = 0, limit: int = SHOWN_CHARS) -> Window:
    """All of ``text`` when it has at most ``limit`` characters; else as many whole lines as
    fit, from a few lines before line ``around`` (from the top without it). A first line
    longer than ``limit`` is cut short."""
    lines = split_lines(text)
    if len(text) <= limit:
        return Window(1, text, len(lines), True)
    start = max(0, around - 1 - WINDOW_CONTEXT) if around else 0
    shown: list[str] = []
    size = 0
    for line in lines[start:]:
        if size + len(line) + 1 > limit:
            if not shown:
                shown.append(line[:limit] + "…")
            break
        shown.append(line)
        size += len(line) + 1
    return Window(start + 1, "\n".join(shown) + "\n", len(lines), False)


def size_text(chars: int) -> str:
    return f"{chars / 1e6:.1f} MB" if chars >= 1e6 else f"{chars / 1e3:.0f} kB"


@dataclass(frozen=True)
class Entry:
    """A file the History screen can show: a page, or the tenant's MEMORY.md."""

    tenant: str
    path: str  # repository-relative
    page_id: str | None  # None for a file that is not a page

    @property
    def name(self) -> str:
        return f"{self.tenant}:{self.page_id or PurePosixPath(self.path).name}"

    def print_command(self, commit: str) -> str:
        """The command that prints this file whole as it was at ``commit``."""
        if self.page_id is None:
            return f"git show {shlex.quote(f'{commit[:10]}:{self.path}')}"
        page = shlex.quote(self.page_id)
        return f"kbmem --tenant {self.tenant} show {page} --at {commit[:10]}"


@dataclass
class Shown:
    """The version of a file currently on screen."""

    entry: Entry
    commit: str
    text: str
    meta: dict[str, Any]
    body: str
    problem: str = ""
    version: str = ""  # the commit of the version in effect at ``commit``
    path: str = ""  # where the file was at ``commit`` (before a rename, not ``entry.path``)


Listing = list[tuple[str, dict[str, tuple[str, str]], str | None]]


def tree_listing(workspace: Workspace) -> tuple[str | None, Listing]:
    """HEAD, and for each tenant (the current one first) its pages (``page id: (path,
    blob)``) and its MEMORY.md's path (None when it has none)."""
    workspace.check_available()
    kb = workspace.kb
    head = kb.head()
    listing: Listing = []
    for tenant in workspace.tenants():
        files = workspace.store(tenant).files() if head else {}
        memory = f"tenants/{tenant}/MEMORY.md"
        has_memory = head is not None and kb.blob_id(memory) is not None
        listing.append((tenant, files, memory if has_memory else None))
    return head, listing


def read_version(
    workspace: Workspace, entry: Entry, commit: str, versions: list[CommitInfo]
) -> Shown:
    """``entry`` as it was at ``commit`` (where it was then, if it moved since), its front
    matter parsed (a header that cannot be read is the version's ``problem``)."""
    kb = workspace.kb
    path = path_at(kb, entry.path, commit, versions)
    try:
        text = kb.read_bytes(path, commit).decode("utf-8", "replace")
    except NotFound:
        raise NotFound(f"{entry.name} did not exist at {commit[:10]}") from None
    meta: dict[str, Any] = {}
    body, problem = text, ""
    if entry.page_id is not None:
        try:
            page = parse_page(text, entry.name)
            meta, body = dict(page.meta), page.body
        except KbmemError as exc:
            problem = str(exc)
    version = version_at(kb, path, commit, versions)
    return Shown(entry, commit, text, meta, body, problem, version, path)


def version_title(shown: Shown, versions: list[CommitInfo], at_head: bool) -> Text:
    """The title line above a version: the file, how many versions it has, and which one
    this is (the latest, or which, as of which commit, and where the file was then)."""
    latest = versions[0].sha if versions else ""
    when = "latest" if shown.version == latest else f"version {short_sha(shown.version)}"
    if not at_head and shown.commit != shown.version:
        when += f" (as of commit {short_sha(shown.commit)})"
    if shown.path and shown.path != shown.entry.path:
        when += f" · then {shown.path.removeprefix(f'tenants/{shown.entry.tenant}/')}"
    count = f"{len(versions)} version{'s' if len(versions) != 1 else ''}"
    return Text.assemble((shown.entry.name, "bold"), (f" · {count} · {when}", "dim"))


def diff_view(entry: Entry, old_sha: str, new_sha: str, diff: str) -> Group:
    """The diff of ``entry`` between two commits under a header; a huge diff only in part,
    with the command that prints it whole."""
    header = Text.assemble(
        ("diff ", "bold"),
        (entry.name, "bold"),
        f"  {short_sha(old_sha)} → {short_sha(new_sha)}\n",
    )
    part = window(diff)
    parts: list[Any] = [header]
    if not part.whole:
        whole = (
            f"kbmem --tenant {entry.tenant} log {shlex.quote(entry.page_id)} "
            f"--diff {old_sha[:10]} {new_sha[:10]}"
            if entry.page_id is not None
            else f"git diff {old_sha[:10]} {new_sha[:10]} -- {shlex.quote(entry.path)}"
        )
        parts.append(
            Text(
                f"Lines 1–{part.last:,} of the diff's {part.total:,} are shown: it is "
                f"{size_text(len(diff))}. The whole of it: {safe(whole)}\n",
                style="bold",
            )
        )
    parts.append(DiffText(part.text if not part.whole else diff))
    return Group(*parts)


def version_details(commit: CommitInfo) -> Text:
    """A version as ``kbmem log --full`` prints it: full id, author, date, the file's path
    then, and the whole message (body and trailers), as plain text."""
    text = Text.assemble(("commit ", "bold"), plain(commit.sha, "bold"), "\n", end="")
    text.append_text(plain(f"{commit.author} · {commit.date}", "dim"))
    if commit.path:
        text.append_text(plain(f" · {commit.path}", "dim"))
    text.append("\n\n")
    text.append_text(plain(commit.message))
    return text


def version_at(kb: Any, path: str, commit: str, versions: list[CommitInfo]) -> str:
    """The version of a file in effect at ``commit`` (where the file was ``path``): the
    commit itself when it is one of ``versions``, else the newest commit before it that
    touched the file, asked of git once (not one ancestry test per newer version: choosing
    the oldest of 500 versions took 6.7 s that way)."""
    if any(c.sha == commit for c in versions):
        return commit
    found = kb.log(path, max_count=1, follow=False, start=commit)
    return found[0].sha if found else ""
