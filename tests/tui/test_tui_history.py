"""The History screen on knowledge bases that push it: a page with 500 versions, a 5 MB page,
a page whose header was broken by hand, a renamed page; driven with Pilot on real git
repositories, as a person would browse them."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import git.cmd as git_cmd
import pytest
from helpers.kbgit import git
from kbmem_tui.app import KbmemApp
from kbmem_tui.scenarios import settle, wait_until
from kbmem_tui.screens.history import HistoryScreen
from kbmem_tui.widgets.interval_view import NumberedLines
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import DataTable, Markdown, Static, TabbedContent, Tree

from kbmem.memorize.template import init_kb
from kbmem.store.repository import KnowledgeBase

NOTES = "tenants/default/notes"
VERSIONS = 500
HUGE_LINES = 30_000


def counter_text(n: int) -> str:
    return f"---\ntitle: Counter\n---\n# Counter\n\nversion {n}\n"


def huge_text(changed: int = -1) -> str:
    """About 5 MB: a header, then line ``i`` at line ``i + 4`` of the file."""
    lines = [
        f"line {i}{' CHANGED' if i == changed else ''} " + "lorem ipsum dolor sit amet " * 6
        for i in range(HUGE_LINES)
    ]
    return "---\ntitle: Huge\n---\n" + "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A knowledge base with a 500-version note, a huge note, a renamed note and a note whose
    header was broken by hand (built once: copy before writing)."""
    root = tmp_path_factory.mktemp("history") / "kb"
    kb = init_kb(root, with_history=False)
    for n in range(VERSIONS):
        kb.commit_files(
            {f"{NOTES}/counter.md": counter_text(n).encode()},
            f"Counter: version {n}",
            date=f"2026-04-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}+00:00",
        )
    kb.commit_files({f"{NOTES}/huge.md": huge_text().encode()}, "Add the huge note")
    kb.commit_files({f"{NOTES}/huge.md": huge_text(15_000).encode()}, "Edit the huge note")
    kb.commit_files({f"{NOTES}/old-name.md": b"---\ntitle: R\n---\nFirst.\n"}, "Add old-name")
    kb.commit_files({f"{NOTES}/other.md": b"---\ntitle: O\n---\nOther.\n"}, "Add other")
    git(root, "mv", f"{NOTES}/old-name.md", f"{NOTES}/new-name.md")
    git(root, "commit", "-q", "-m", "Rename old-name to new-name")
    kb.commit_files({f"{NOTES}/new-name.md": b"---\ntitle: R\n---\nSecond.\n"}, "Edit new-name")
    broken = root / NOTES / "broken.md"
    broken.write_text("---\ntitle: [never closed\n---\nBroken by hand.\n")
    git(root, "add", str(broken))
    git(root, "commit", "-q", "-m", "Add a note by hand")
    return root


@pytest.fixture
def kb(master: Path, tmp_path: Path) -> KnowledgeBase:
    target = tmp_path / "kb"
    shutil.copytree(master, target, symlinks=True)
    return KnowledgeBase(target)


def make_app(kb: KnowledgeBase) -> KbmemApp:
    # No model preload or index sync: they would compete with what these tests time.
    return KbmemApp(kb, "default", cursor_blink=False, show_times=False, background=False)


async def open_in_tree(pilot: Pilot, page_id: str) -> HistoryScreen:
    """F3, then choose ``page_id`` in the tree with the keyboard; wait until it is shown."""
    app = pilot.app
    if not isinstance(app.screen, HistoryScreen):
        await pilot.press("f3")
    screen = app.screen
    assert isinstance(screen, HistoryScreen)
    tree = screen.query_one(Tree)
    await wait_until(pilot, lambda: bool(tree.root.children), "the page tree")
    tree.focus()
    tree.move_cursor(next(n for n in _leaves(tree.root) if n.data.page_id == page_id))
    await pilot.press("enter")
    await wait_until(
        pilot,
        lambda: screen.shown is not None and screen.shown.entry.page_id == page_id,
        page_id,
    )
    await idle(pilot)
    return screen


async def idle(pilot: Pilot) -> None:
    """Every worker finished (the toasts stay, unlike :func:`settle`)."""
    app = pilot.app
    await wait_until(pilot, lambda: all(w.is_finished for w in app.workers), "the workers")
    await pilot.pause()


def _leaves(node):
    for child in node.children:
        if child.data is not None:
            yield child
        yield from _leaves(child)


def test_the_oldest_of_500_versions_opens_as_fast_as_the_newest(kb: KnowledgeBase) -> None:
    asyncio.run(_oldest_version(kb))


@contextlib.contextmanager
def git_processes() -> Iterator[list[object]]:
    """The git processes started meanwhile (kbmem's own and GitPython's)."""
    started: list[object] = []

    def counting(popen):
        def start(*args, **kwargs):
            started.append(args[0] if args else kwargs.get("args"))
            return popen(*args, **kwargs)

        return start

    with (
        mock.patch("subprocess.Popen", counting(subprocess.Popen)),
        mock.patch("git.cmd.Popen", counting(git_cmd.Popen)),
    ):
        yield started


async def _oldest_version(kb: KnowledgeBase) -> None:
    async with make_app(kb).run_test(size=(120, 40)) as pilot:
        screen = await open_in_tree(pilot, "notes/counter.md")
        assert len(screen.versions) == VERSIONS
        await pilot.press("v")
        for key, row in (("ctrl+home", 0), ("ctrl+end", VERSIONS - 1)):
            sha = screen.versions[row].sha
            with git_processes() as started:
                await pilot.press(key, "enter")
                await wait_until(pilot, lambda sha=sha: screen.shown.commit == sha, f"row {row}")
            await settle(pilot)
            # Choosing the oldest once tested every newer version for ancestry, one git
            # process each (6.7 s here), and read the whole history again: a version needs
            # no more git processes than the newest does.
            assert len(started) <= 3, (row, len(started), started[:5])
        assert screen.shown.version == screen.versions[-1].sha
        assert "version 0" in screen.query_one("#page-body", Markdown).source


def test_the_version_chosen_last_is_the_one_shown(kb: KnowledgeBase) -> None:
    asyncio.run(_chosen_last(kb))


async def _chosen_last(kb: KnowledgeBase) -> None:
    async with make_app(kb).run_test(size=(120, 40)) as pilot:
        screen = await open_in_tree(pilot, "notes/counter.md")
        counter = screen.shown.entry
        huge = next(n.data for n in _leaves(screen.query_one(Tree).root) if "huge" in n.data.path)
        # The huge note (slow to read) chosen, then 20 ms later the counter again (quick: its
        # history is already read): the huge note's late answer must not replace it.
        screen.load_file(huge)
        await pilot.pause(0.02)
        screen.load_file(counter)
        await idle(pilot)
        await pilot.pause(0.5)
        await idle(pilot)
        assert screen.shown.entry == counter
        assert "version 499" in screen.query_one("#page-body", Markdown).source


def test_a_huge_page_shows_a_part_and_says_how_to_print_it_whole(kb: KnowledgeBase) -> None:
    asyncio.run(_huge(kb))


async def _huge(kb: KnowledgeBase) -> None:
    async with make_app(kb).run_test(size=(120, 40)) as pilot:
        # Laid out whole, the 5 MB page froze the screen for 20 s and more: only a window of
        # it is laid out.
        screen = await open_in_tree(pilot, "notes/huge.md")
        total = HUGE_LINES + 3
        note = str(screen.query_one("#page-note", Static).content)
        assert screen.query_one("#page-note", Static).display
        size = f"{len(huge_text(15_000)) / 1e6:.1f} MB"
        assert f"Only the beginning of this version is shown: it is {size}" in note
        assert f"kbmem --tenant default show notes/huge.md --at {screen.shown.commit[:10]}" in note
        assert len(screen.query_one("#page-body", Markdown).source) <= 100_000
        lines = screen.query_one(NumberedLines)
        assert lines.first == 1 and 100 < len(lines.lines) < 2000
        source = screen.query_one("#source-scroll")
        assert f"of {total:,} are shown" in str(source.query_one(".cut-note", Static).content)

        # A citation deep inside it (as from the chat or the audit) shows those lines.
        head = screen.shown.commit
        screen.show_page("notes/huge.md", head, (15_004, 15_005))
        await wait_until(pilot, lambda: screen.shown_lines == (15_004, 15_005), "the lines")
        await settle(pilot)
        assert screen.query_one(TabbedContent).active == "source"
        lines = screen.query_one(NumberedLines)
        assert lines.first < 15_004 < lines.first + len(lines.lines)
        cited = lines.cited()
        assert cited is not None and lines.lines[15_004 - lines.first].startswith("line 15000 ")

        # Its diff, one line changed in 30,000, is shown whole.
        await pilot.press("v", "d")
        await wait_until(pilot, lambda: "@@" in _diff_text(screen), "the diff")
        assert "+line 15000 CHANGED" in _diff_text(screen)


def _diff_text(screen: HistoryScreen) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(screen.query_one("#diff-text", Static).content)
    return console.export_text()


def test_a_page_whose_header_was_broken_by_hand_is_a_warning(kb: KnowledgeBase) -> None:
    asyncio.run(_broken(kb))


async def _broken(kb: KnowledgeBase) -> None:
    app = make_app(kb)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f3")
        # Opened from the Versions tab of another page, where no problem row is in sight.
        screen = await open_in_tree(pilot, "notes/other.md")
        await pilot.press("v")
        screen = await open_in_tree(pilot, "notes/broken.md")
        assert screen.shown.problem
        assert isinstance(app.screen, HistoryScreen)
        warnings = [n for n in app._notifications if n.severity == "warning"]
        assert warnings and "front matter is not valid YAML" in warnings[-1].message


def test_home_and_end_go_to_the_newest_and_the_oldest_version(kb: KnowledgeBase) -> None:
    asyncio.run(_home_end(kb))


async def _home_end(kb: KnowledgeBase) -> None:
    async with make_app(kb).run_test(size=(80, 24)) as pilot:
        screen = await open_in_tree(pilot, "notes/counter.md")
        await pilot.press("v")
        table = screen.query_one("#version-table", DataTable)
        assert screen.app.focused is table
        await pilot.press("end")
        assert table.cursor_row == VERSIONS - 1
        await pilot.press("enter")
        oldest = screen.versions[-1].sha
        await wait_until(pilot, lambda: screen.shown.commit == oldest, "the oldest")
        await pilot.press("v", "home")
        assert table.cursor_row == 0


def test_a_renamed_page_at_a_commit_before_its_rename(kb: KnowledgeBase) -> None:
    asyncio.run(_renamed(kb))


async def _renamed(kb: KnowledgeBase) -> None:
    async with make_app(kb).run_test(size=(120, 40)) as pilot:
        screen = await open_in_tree(pilot, "notes/new-name.md")
        added = next(c.sha for c in screen.versions if c.message == "Add old-name")
        between = next(c.sha for c in kb.log() if c.message == "Add other")  # not a version
        await pilot.press("g", *between[:10], "enter")
        await wait_until(pilot, lambda: screen.shown.commit == between, "the commit")
        await settle(pilot)
        assert screen.shown.version == added
        assert screen.shown.body == "First.\n"
        # The title says what the page was called then.
        title = str(screen.query_one("#page-title", Static).content)
        assert title.endswith(
            f"version {added[:7]} (as of commit {between[:7]}) · then notes/old-name.md"
        )
        await pilot.press("v", "ctrl+end", "m", "ctrl+home", "d")
        await wait_until(pilot, lambda: "@@" in _diff_text(screen), "the diff")
        diff = _diff_text(screen)
        assert f":{NOTES}/old-name.md" in diff and f":{NOTES}/new-name.md" in diff
        assert "-First.\n+Second." in diff


def test_a_versions_full_id_and_whole_message_are_shown_below_the_versions(
    kb: KnowledgeBase,
) -> None:
    """The table of versions gives a short id and the subject; the version under the cursor
    is given in full below it: its whole commit id, and its whole message, body and
    trailers."""
    asyncio.run(_version_details(kb))


async def _version_details(kb: KnowledgeBase) -> None:
    message = "Edit other\n\nWhy: the body explains the change,\nover two lines."
    edited = kb.commit_files(
        {f"{NOTES}/other.md": b"---\ntitle: O\n---\nOther, edited.\n"},
        message,
        trailers={"Kbmem-Session": "by-hand"},
    )
    added = next(c.sha for c in kb.log() if c.message == "Add other")
    async with make_app(kb).run_test(size=(80, 24)) as pilot:
        screen = await open_in_tree(pilot, "notes/other.md")
        await pilot.press("v")
        detail = screen.query_one("#version-detail", Static)
        await wait_until(pilot, lambda: edited in _shown(detail), "the newest version in full")
        shown = _shown(detail)
        assert shown.startswith(f"commit {edited}\nkbmem · ")
        assert f"\n\n{message}\n\nKbmem-Session: by-hand" in shown
        await pilot.press("down")
        await wait_until(pilot, lambda: added in _shown(detail), "the older version in full")
        assert _shown(detail).endswith("\n\nAdd other") and "Why:" not in _shown(detail)


def _shown(widget: Static) -> str:
    content = widget.content
    return content.plain if hasattr(content, "plain") else str(content)
