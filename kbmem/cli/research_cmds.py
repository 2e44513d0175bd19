"""Retrieval and research commands: search, reindex, ask."""

from __future__ import annotations

import argparse
from typing import Any

from kbmem.cli import Commands
from kbmem.textutil import json_text, printable


def register(sub: Commands) -> None:
    p = sub.add_parser("search", help="search the tenant's memory (one-shot retrieval)")
    p.add_argument("query")
    p.add_argument("--tool", choices=("bm25", "dense", "hybrid"), default="hybrid")
    p.add_argument("-k", type=int, default=10, help="how many intervals (1..1000)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_search)

    p = sub.add_parser("reindex", help="bring the tenant's indexes up to HEAD")
    p.add_argument("--full", action="store_true", help="rebuild from scratch")
    p.add_argument("--all-tenants", action="store_true", help="every tenant in the repository")
    p.set_defaults(handler=cmd_reindex)


def cmd_search(ctx: Any, args: argparse.Namespace) -> int:
    from kbmem.interfaces.service import hit_dict
    from kbmem.research.toolkit import Toolkit

    hits = Toolkit(ctx.kb, ctx.reading_tenant).search(args.query, args.tool, args.k)
    if args.json:
        print(
            json_text(
                {"query": args.query, "tool": args.tool, "hits": [hit_dict(h) for h in hits]},
                indent=1,
            )
        )
        return 0
    if not hits:
        print("no hits")
    for n, hit in enumerate(hits, start=1):
        excerpt = " ".join(hit.excerpt.split())
        if len(excerpt) > 160:
            excerpt = excerpt[:157] + "..."
        print(printable(f"{n:>2}. {hit.interval.citation()}  {hit.score:.4f}  {excerpt}"))
    return 0


def cmd_reindex(ctx: Any, args: argparse.Namespace) -> int:
    from kbmem.cli.progress import Progress
    from kbmem.index.tenant import TenantIndex
    from kbmem.store.pagestore import tenant_names

    tenants = [ctx.tenant if args.all_tenants else ctx.reading_tenant]
    if args.all_tenants:
        tenants = tenant_names(ctx.kb) or tenants
    for tenant in tenants:
        with Progress(f"index {tenant}", "interval") as bar:
            report = TenantIndex(ctx.kb, tenant).sync(full=args.full, progress=bar.update)
        print(
            printable(
                f"{tenant}: {report.mode} sync to {(report.commit or 'empty')[:10]}: "
                f"{report.pages_changed} page(s), +{report.intervals_added} "
                f"-{report.intervals_removed} intervals in {report.seconds:.2f} s"
                + (f" ({report.reason})" if report.reason else "")
            )
        )
    return 0
