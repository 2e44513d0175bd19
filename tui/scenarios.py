"""Reproducible walks through the three screens on the example knowledge base, driven with
Pilot as a person would (keys, not method calls): the snapshot tests and the README
screenshots (``python -m tui.scenarios docs/screenshots``) use the same walks.

Reproducible: a fixed chat id, no wall-clock times or durations on screen, cursor blink off,
a fixed knowledge-base label, every worker finished and the toasts cleared before the
picture; the example history carries fixed dates, so its commit ids are the same everywhere.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets.tree import TreeNode

from kbmem.store.repository import KnowledgeBase

from .app import KbmemApp

SIZE = (120, 40)
QUESTION = "Which company was the first pilot customer for Ferrylog?"
GLOSSARY = "notes/glossary.md"
# An edit of the glossary, committed at a fixed date, so the History screen has a diff.
GLOSSARY_OLD = "here, add it. Maintained by Priya Raghunathan; anyone may edit."
GLOSSARY_NEW = (
    "here, add it. Maintained by Femi Adeyemi since March 2026 (before her, Priya\n"
    "Raghunathan); anyone may edit."
)
EDIT_DATE = "2026-03-24T09:15:00+00:00"


def make_app(kb: KnowledgeBase) -> KbmemApp:
    """The app as the snapshots and screenshots see it."""
    return KbmemApp(
        kb,
        "default",
        kb_label="example-kb",
        chat_id="readme-demo",
        cursor_blink=False,
        show_times=False,
    )


def edit_glossary(kb: KnowledgeBase, tenant: str = "default") -> str:
    """Commit the glossary edit (a person's edit of a note); returns the commit id."""
    path = f"tenants/{tenant}/{GLOSSARY}"
    text = kb.read_bytes(path).decode("utf-8")
    if GLOSSARY_OLD not in text:
        raise ValueError(f"{path} no longer holds the line the scenario edits")
    sha = kb.commit_files(
        {path: text.replace(GLOSSARY_OLD, GLOSSARY_NEW).encode("utf-8")},
        "Glossary: Femi Adeyemi maintains it now",
        date=EDIT_DATE,
    )
    assert sha is not None
    return sha


async def wait_until(
    pilot: Pilot[object], condition: Callable[[], bool], what: str, timeout: float = 180.0
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what}")
        await pilot.pause(0.05)


async def settle(pilot: Pilot[object]) -> None:
    """Every worker finished, no toast left, nothing still animating."""
    app = pilot.app
    await wait_until(pilot, lambda: all(w.is_finished for w in app.workers), "the workers")
    await pilot.pause(0.2)
    await wait_until(pilot, lambda: all(w.is_finished for w in app.workers), "the workers")
    app.clear_notifications()
    await pilot.pause()


async def ask(pilot: Pilot[object], question: str = QUESTION) -> None:
    """Type a question on the Chat screen, send it, and wait for the whole turn."""
    from .screens.chat import ChatScreen

    app = pilot.app
    await pilot.press("f2")
    screen = app.screen
    assert isinstance(screen, ChatScreen)
    await pilot.press(*question, "enter")
    await wait_until(pilot, lambda: screen.reply is not None, "the reply to start")
    await wait_until(
        pilot, lambda: screen.reply is not None and screen.reply.finished, "the answer"
    )


async def chat_scenario(pilot: Pilot[object]) -> None:
    """Ask the example question: the answer, its sources and the trace panel, filled."""
    await ask(pilot)
    await settle(pilot)


async def history_scenario(pilot: Pilot[object]) -> None:
    """Open the glossary on the History screen and diff its two versions."""
    from textual.widgets import Tree

    from .screens.history import HistoryScreen

    app = pilot.app
    await pilot.press("f3")
    screen = app.screen
    assert isinstance(screen, HistoryScreen)
    tree = screen.query_one(Tree)
    await wait_until(pilot, lambda: bool(tree.root.children), "the page tree")
    node = next(
        n for n in _walk(tree.root) if n.data is not None and n.data.path.endswith("/" + GLOSSARY)
    )
    tree.focus()
    tree.move_cursor(node)
    await pilot.press("enter")
    await wait_until(
        pilot,
        lambda: screen.shown is not None and screen.shown.entry.page_id == GLOSSARY,
        "the glossary",
    )
    await pilot.press("v", "d")
    await settle(pilot)


async def audit_scenario(pilot: Pilot[object]) -> None:
    """Ask, then audit the turn: the intervals the answer rested on, at their commit."""
    from .screens.audit import AuditScreen

    await ask(pilot)
    app = pilot.app
    await pilot.press("f4")
    screen = app.screen
    assert isinstance(screen, AuditScreen)
    await wait_until(pilot, lambda: screen.current is not None, "the turn")
    await pilot.press("i")
    await settle(pilot)


def _walk(node: TreeNode[Any]) -> Iterator[TreeNode[Any]]:
    yield node
    for child in node.children:
        yield from _walk(child)


SCENARIOS: dict[str, Callable[[Pilot[object]], Awaitable[None]]] = {
    "chat": chat_scenario,
    "history": history_scenario,
    "audit": audit_scenario,
}


def screenshot(kb_root: Path, name: str, out: Path) -> None:
    """Run one scenario on a copy of ``kb_root`` and save the screen as SVG to ``out``."""
    with tempfile.TemporaryDirectory(prefix="kbmem-shot-") as tmp:
        root = Path(tmp) / "kb"
        shutil.copytree(kb_root, root, symlinks=True)
        kb = KnowledgeBase(root)
        if name == "history":
            edit_glossary(kb)
        app = make_app(kb)

        async def drive(pilot: Pilot[object]) -> None:
            await SCENARIOS[name](pilot)
            app.save_screenshot(out.name, str(out.parent))
            app.exit()

        app.run(headless=True, size=SIZE, auto_pilot=drive)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tui.scenarios",
        description="Save an SVG screenshot of each screen on the example knowledge base.",
    )
    parser.add_argument("out", type=Path, help="folder for chat.svg, history.svg, audit.svg")
    parser.add_argument("--only", choices=sorted(SCENARIOS), default=None)
    args = parser.parse_args(argv)
    from kbmem.index.tenant import TenantIndex
    from kbmem.memorize.template import init_kb

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kbmem-example-") as tmp:
        kb = init_kb(Path(tmp) / "kb")
        TenantIndex(kb, "default").sync()
        for name in [args.only] if args.only else list(SCENARIOS):
            out = args.out / f"{name}.svg"
            screenshot(kb.root, name, out)
            print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
