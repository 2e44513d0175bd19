"""``python -m tui [--kb DIR] [--tenant T] [--model M]``: open the TUI (``kbmem chat`` does the
same). With ``--bench FILE`` the app runs headless, asks ``--question`` as soon as the first
screen has painted, writes its timing marks (wall-clock seconds) to FILE as JSON and exits;
``kbmem bench tui`` runs it in a subprocess so that the core never imports Textual."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

STARTED = time.time()

DEFAULT_QUESTION = "Which company was the first pilot customer for Ferrylog?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tui", description=__doc__)
    parser.add_argument("--kb", type=Path, default=Path(os.environ.get("KBMEM_KB") or "."))
    parser.add_argument("--tenant", default=None)
    parser.add_argument("--model", default=None, help="litellm model (default: settings)")
    parser.add_argument("--bench", type=Path, default=None, help="write timing marks here")
    parser.add_argument("--question", default=DEFAULT_QUESTION, help="what --bench asks")
    parser.add_argument("--timeout", type=float, default=300.0, help="--bench gives up after")
    args = parser.parse_args(argv)

    from kbmem.errors import KbmemError
    from kbmem.store import KnowledgeBase

    try:
        kb = KnowledgeBase(args.kb)
        tenant = args.tenant or kb.settings.data["default_tenant"]
    except KbmemError as exc:
        print(f"kbmem: error: {exc}", file=sys.stderr)
        return exc.exit_code
    if args.bench is None:
        from .app import run_app

        run_app(kb, tenant, args.model)
        return 0
    return bench(kb, tenant, args.model, args.bench, args.question, args.timeout)


def bench(
    kb: object, tenant: str, model: str | None, out: Path, question: str, timeout: float
) -> int:
    """Run the app headless, ask one question, record when things happened."""
    marks: dict[str, float] = {"process_start": STARTED}
    parent = os.environ.get("KBMEM_TUI_T0")
    if parent:
        marks["spawn"] = float(parent)

    def mark(name: str) -> None:
        marks.setdefault(name, time.time())

    from .app import KbmemApp

    marks["imported"] = time.time()
    app = KbmemApp(kb, tenant, model, marker=mark)  # type: ignore[arg-type]
    answer: dict[str, str] = {}

    async def drive(pilot: object) -> None:
        from textual.pilot import Pilot

        assert isinstance(pilot, Pilot)
        deadline = time.monotonic() + timeout
        while "first_paint" not in marks and time.monotonic() < deadline:
            await pilot.pause(0.01)
        from .screens.chat import ChatScreen

        screen = app.screen
        assert isinstance(screen, ChatScreen)
        marks["asked"] = time.time()
        screen.send(question)
        while "answer" not in marks and time.monotonic() < deadline:
            await pilot.pause(0.02)
        if screen.reply is not None:
            answer["text"] = screen.reply.markdown.source
        app.exit()

    app.run(headless=True, size=(120, 40), auto_pilot=drive)  # type: ignore[arg-type]
    marks["exited"] = time.time()
    result = {"marks": marks, "answer": answer.get("text", ""), "question": question}
    out.write_text(json.dumps(result, ensure_ascii=False, indent=1))
    return 0 if "answer" in marks else 1


if __name__ == "__main__":
    sys.exit(main())
