"""The TUI's side of ``kbmem bench tui``: when ``KBMEM_TUI_BENCH`` names a file,
:func:`tui.app.run_app` runs the app headless (120×40), asks ``KBMEM_TUI_BENCH_QUESTION`` as
soon as the chat screen has painted, writes the wall-clock timing marks to that file as JSON
and exits. The benchmark starts ``kbmem chat`` in a subprocess, so that it times the real
entry point and the core never imports Textual."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from kbmem.store.repository import KnowledgeBase

ENV_FILE = "KBMEM_TUI_BENCH"
ENV_QUESTION = "KBMEM_TUI_BENCH_QUESTION"
ENV_T0 = "KBMEM_TUI_T0"
DEFAULT_QUESTION = "Which company was the first pilot customer for Ferrylog?"
TIMEOUT_S = 300.0


def requested() -> Path | None:
    value = os.environ.get(ENV_FILE)
    return Path(value) if value else None


def run_bench(kb: KnowledgeBase, tenant: str, model: str | None, out: Path) -> None:
    """Run the app once, headless, for the benchmark; write the marks to ``out``."""
    from textual.pilot import Pilot

    from .app import KbmemApp
    from .screens.chat import ChatScreen

    marks: dict[str, float] = {"app_start": time.time()}
    if os.environ.get(ENV_T0):
        marks["spawn"] = float(os.environ[ENV_T0])
    question = os.environ.get(ENV_QUESTION) or DEFAULT_QUESTION
    # The driver waits on events, not by polling with ``pilot.pause``: every pause makes the
    # whole screen re-layout, and dozens a second would load the UI thread (and the GIL the
    # model's import needs) far beyond anything a person at the keyboard causes.
    waited = ("first_paint", "answer")
    signals: dict[str, asyncio.Event] = {}
    loop: list[asyncio.AbstractEventLoop] = []

    def marker(name: str) -> None:
        marks.setdefault(name, time.time())
        if loop and name in signals:
            loop[0].call_soon_threadsafe(signals[name].set)

    app = KbmemApp(kb, tenant, model, marker=marker)
    answer: dict[str, Any] = {}

    async def reached(name: str) -> bool:
        try:
            await asyncio.wait_for(signals[name].wait(), TIMEOUT_S)
        except TimeoutError:
            return False
        return True

    async def drive(pilot: Pilot[object]) -> None:
        signals.update({name: asyncio.Event() for name in waited})
        loop.append(asyncio.get_running_loop())
        for name in waited:
            if name in marks:  # marked before the driver started
                signals[name].set()
        if await reached("first_paint") and isinstance(app.screen, ChatScreen):
            screen = app.screen
            marks["asked"] = time.time()
            screen.send(question)
            await reached("answer")
            await pilot.pause()  # let the last of the reply render before reading it
            if screen.reply is not None:
                answer["text"] = screen.reply.markdown.source
        app.exit()

    app.run(headless=True, size=(120, 40), auto_pilot=drive)
    marks["exited"] = time.time()
    result = {"marks": marks, "question": question, "answer": answer.get("text", "")}
    out.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
