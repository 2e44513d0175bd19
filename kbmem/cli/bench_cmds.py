"""``kbmem bench ...``: each benchmark prints its figures, or one JSON object with --json."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import Any

from kbmem.cli import Commands
from kbmem.textutil import json_text, printable

DEFAULT_DATA = Path("../shared/data/locomo")

# name -> (module under kbmem.bench, help, needs --data)
BENCHES = {
    "ingest": ("ingest", "memorize LoCoMo into a fresh knowledge base", True),
    "retrieval": ("retrieval", "one-shot retrieval quality per tool on LoCoMo", True),
    "scale": ("scale", "build/sync/query costs on a synthetic knowledge base", False),
    "locomo": ("research", "the researcher on every LoCoMo question", True),
    "answers": ("answers_chat", "the chat's answers to LoCoMo questions, scored", True),
    "chat": ("chat", "offline chat turns on the example knowledge base", False),
    "tui": ("tui", "time to first paint and first answer of the TUI", False),
    "api": ("api", "what the HTTP API adds to research and search requests", False),
    "sync": ("sync", "replicas over a loopback git server: lag, throughput, bytes", True),
    "mcp": ("mcp", "time to a research result through MCP clients (stdio, HTTP)", False),
    "soak": ("soak", "well-behaved clients while git gc, floods, a kill -9 and more hit", False),
}


def register(sub: Commands) -> None:
    bench = sub.add_parser("bench", help="benchmarks (figures printed, targets in the docs)")
    bsub = bench.add_subparsers(dest="bench", metavar="BENCH", required=True)
    for name, (module, text, needs_data) in BENCHES.items():
        p = bsub.add_parser(name, help=text)
        if needs_data:
            p.add_argument(
                "--data",
                type=Path,
                default=DEFAULT_DATA,
                help=f"folder of LoCoMo .json files (default {DEFAULT_DATA})",
            )
        p.add_argument("--json", action="store_true", help="print one JSON object")
        p.set_defaults(handler=_runner(module))
        try:
            mod = importlib.import_module(f"kbmem.bench.{module}")
        except ModuleNotFoundError:
            continue
        if hasattr(mod, "add_arguments"):
            mod.add_arguments(p)


def _runner(module: str) -> Any:
    def handler(ctx: Any, args: argparse.Namespace) -> int:
        mod = importlib.import_module(f"kbmem.bench.{module}")
        options = {
            k: v
            for k, v in vars(args).items()
            if k not in ("handler", "command", "bench", "json", "kb", "tenant", "verbose")
        }
        if "data" in options:
            options["data_dir"] = options.pop("data")
        result = (
            mod.run(ctx=ctx, **options)
            if getattr(mod, "WANTS_CONTEXT", False)
            else mod.run(**options)
        )
        print(json_text(result, indent=1) if args.json else printable(mod.render(result)))
        return 0

    return handler
