"""``python -m tui [--kb DIR] [--tenant T] [--model M]``: open the TUI, as ``kbmem chat`` does
(``KBMEM_TUI_BENCH`` turns either into the benchmark run of :mod:`tui.bench`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tui", description=__doc__)
    parser.add_argument("--kb", type=Path, default=Path(os.environ.get("KBMEM_KB") or "."))
    parser.add_argument("--tenant", default=None)
    parser.add_argument("--model", default=None, help="litellm model (default: settings)")
    args = parser.parse_args(argv)

    from kbmem.errors import KbmemError
    from kbmem.store.repository import KnowledgeBase

    try:
        kb = KnowledgeBase(args.kb)
        tenant = args.tenant or kb.settings.data["default_tenant"]
    except KbmemError as exc:
        print(f"kbmem: error: {exc}", file=sys.stderr)
        return exc.exit_code
    from .app import run_app

    run_app(kb, tenant, args.model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
