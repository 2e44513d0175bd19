"""Commands on the knowledge base itself: init, ingest, pages, show, log."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

from kbmem.cli import Commands
from kbmem.cli.progress import Progress
from kbmem.cli.sync_cmds import sync_after_commits
from kbmem.errors import ValidationError
from kbmem.interfaces.service import commit_dict, ingest_result_dict
from kbmem.memorize.memo import memo_engine
from kbmem.memorize.memorizer import check_session_size, ingest_session
from kbmem.memorize.sessions import load_sessions
from kbmem.memorize.template import init_kb
from kbmem.store.pagestore import PageStore, tenant_names, tenant_prefix
from kbmem.store.repository import CommitInfo
from kbmem.textutil import json_text, printable


def register(sub: Commands) -> None:
    p = sub.add_parser("init", help="create a knowledge base from kb_template/")
    p.add_argument(
        "dir",
        type=Path,
        nargs="?",
        help="folder to create, empty or absent (default: --kb, else $KBMEM_KB)",
    )
    p.add_argument("--empty", action="store_true", help="settings only, no example history")
    p.set_defaults(handler=cmd_init)

    p = sub.add_parser("ingest", help="memorize sessions (Summit JSON/YAML or LoCoMo JSON)")
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--model", help="write memos with this litellm model (memo_engine llm)")
    p.add_argument("--json", action="store_true", help="print one JSON result per session")
    p.set_defaults(handler=cmd_ingest)

    p = sub.add_parser("pages", help="list the tenant's pages")
    p.add_argument(
        "--check",
        action="store_true",
        help="report pages whose header cannot be read (exit 1 if any)",
    )
    p.add_argument("--at", default="HEAD", help="revision to list (default HEAD)")
    p.set_defaults(handler=cmd_pages)

    p = sub.add_parser("show", help="print a page, as committed now or at a revision")
    p.add_argument("page")
    p.add_argument("--at", default="HEAD", help="revision (commit, tag, HEAD~3, ...)")
    p.set_defaults(handler=cmd_show)

    p = sub.add_parser("log", help="history of a page, or of all the tenant's pages")
    p.add_argument("page", nargs="?")
    p.add_argument("-n", type=int, default=None, help="at most this many commits")
    p.add_argument(
        "--diff",
        nargs=2,
        metavar=("OLD", "NEW"),
        help="print the page's diff between two revisions instead",
    )
    p.add_argument(
        "--full",
        action="store_true",
        help="each commit's full id and whole message (its body and trailers too)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the commits as JSON: full id, date, author, subject, message, path",
    )
    p.set_defaults(handler=cmd_log)


def cmd_init(ctx: Any, args: argparse.Namespace) -> int:
    target = args.dir or args.kb or os.environ.get("KBMEM_KB")
    if not target:
        raise ValidationError("name the folder to create: kbmem init DIR", "dir")
    if args.dir and args.kb and args.dir.resolve() != args.kb.resolve():
        raise ValidationError(f"names {str(args.dir)!r} but --kb names {str(args.kb)!r}", "dir")
    with Progress("init", "session") as bar:
        kb = init_kb(Path(target), with_history=not args.empty, progress=bar.update)
    print(printable(f"created knowledge base at {kb.root} ({(kb.head() or '')[:10]})"))
    return 0


def cmd_ingest(ctx: Any, args: argparse.Namespace) -> int:
    kb = ctx.kb
    tenant = ctx.tenant  # validates --tenant before anything is read
    engine = memo_engine(kb.settings, args.model)
    # Validate every file and session before writing anything: bad input leaves no commit.
    batches = [load_sessions(path, ctx.tenant_arg, default_tenant=tenant) for path in args.files]
    sessions = [s for batch in batches for s in batch]
    for session in sessions:
        check_session_size(kb, session)
    counts: dict[str, int] = {}
    head_before = kb.head()
    with Progress("ingest", "session", len(sessions)) as bar:
        for session in sessions:
            result = ingest_session(kb, session, engine)
            counts[result.status] = counts.get(result.status, 0) + 1
            if result.tenant_created:
                # A new tenant is no error, but a misspelt --tenant or tenantId is one way
                # to make it: say so, with the tenants there were.
                others = [t for t in tenant_names(kb) if t != result.tenant_id]
                print(
                    printable(
                        f"kbmem: created tenant {result.tenant_id!r}: it held nothing before "
                        f"this session (other tenants: {', '.join(others) or 'none'})"
                    ),
                    file=sys.stderr,
                )
            if args.json:
                print(json_text(ingest_result_dict(result)))
            elif result.memo_note:
                note = f"note: {result.session_id}: {result.memo_note}"
                print(printable(note), file=sys.stderr)
            bar.advance()
    if not args.json:
        summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        print(f"{len(sessions)} session(s): {summary}")
    sync_after_commits(kb, head_before)  # when sync is on; never fails the ingest
    return 0


def cmd_pages(ctx: Any, args: argparse.Namespace) -> int:
    store = PageStore(ctx.kb, ctx.reading_tenant)
    if args.check:
        problems = store.check(args.at)
        for path, problem in problems:
            print(printable(f"{path}: {problem}"))
        total = len(store.files(args.at)) if ctx.kb.head() else 0
        print(f"{total} page(s), {len(problems)} with problems", file=sys.stderr)
        return 1 if problems else 0
    for record in store.iter_pages(args.at):
        meta = record.page.meta
        title = meta.get("title") or ""
        print(printable(f"{record.page_id}\t{str(meta.get('created_at', ''))[:10]}\t{title}"))
    return 0


def cmd_show(ctx: Any, args: argparse.Namespace) -> int:
    # As `kbmem log PAGE` lists its versions: under the name the page had at each.
    stored = PageStore(ctx.kb, ctx.tenant).read_stored(args.page, args.at, follow=True)
    if stored.problem:
        # The person must see the page to repair it: shown as stored, with what is wrong.
        # Exit 0, as `kbmem pages` when it skips such a page; `pages --check` exits 1.
        note = (
            f"kbmem: warning: {stored.problem}; the page is printed as stored, for you to repair "
            "its header ('kbmem pages --check' lists every such page)"
        )
        print(printable(note), file=sys.stderr)
    sys.stdout.write(printable(stored.text))
    return 0


def cmd_log(ctx: Any, args: argparse.Namespace) -> int:
    if args.n is not None and args.n <= 0:
        raise ValidationError("must be a positive number", "-n")
    if args.diff:
        if args.page is None:
            raise ValidationError("--diff needs a PAGE", "PAGE")
        for flag in ("json", "full"):
            if getattr(args, flag):
                raise ValidationError("lists commits; it does not go with --diff", f"--{flag}")
        sys.stdout.write(printable(PageStore(ctx.kb, ctx.tenant).diff(args.page, *args.diff)))
        return 0
    if args.page is not None:  # an empty PAGE is an error, not the whole tenant's log
        commits = PageStore(ctx.kb, ctx.tenant).history(args.page, args.n)
    else:
        # The tenant's history only: commit messages name sessions and notes, and another
        # tenant's are not this one's to read.
        commits = ctx.kb.log(tenant_prefix(ctx.reading_tenant), max_count=args.n, follow=False)
    if args.page is None:
        # A commit's path is the page's name then; a commit of the tenant's has many paths.
        commits = [dataclasses.replace(c, path=None) for c in commits]
    if args.json:
        print(json_text([commit_dict(c) for c in commits], indent=1))
        return 0
    for n, c in enumerate(commits):
        if args.full:
            sys.stdout.write(printable(("\n" if n else "") + full_commit_text(c)))
            continue
        subject = c.message.splitlines()[0] if c.message else ""
        where = f"  [{c.path}]" if c.path else ""
        print(printable(f"{c.sha[:10]}  {c.date[:19]}  {c.author:<8}  {subject}{where}"))
    return 0


def full_commit_text(commit: CommitInfo) -> str:
    """A commit as ``kbmem log --full`` prints it, as ``git log`` does: its full id, author,
    date, the page's path then (when known), and its whole message indented."""
    out = [f"commit {commit.sha}", f"Author: {commit.author}", f"Date:   {commit.date}"]
    if commit.path:
        out.append(f"Path:   {commit.path}")
    out.append("")
    out += [f"    {line}".rstrip() for line in commit.message.split("\n")]
    return "\n".join(out) + "\n"
