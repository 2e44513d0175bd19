"""Sync commands (remote add, remote show, sync) and the sync every writer runs: in the
background beside ``serve``, ``mcp`` and ``chat``, once after a one-shot writer's commits."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kbmem.cli import Commands
from kbmem.store.repository import KnowledgeBase
from kbmem.textutil import json_text, printable

if TYPE_CHECKING:
    from kbmem.sync.background import BackgroundSync, SyncStatus


def register(sub: Commands) -> None:
    p = sub.add_parser("remote", help="the git remote this memory syncs with")
    actions = p.add_subparsers(dest="remote_action", metavar="ACTION", required=True)
    add = actions.add_parser(
        "add", help="add a git remote (credentials stay with git's helpers and ssh)"
    )
    add.add_argument("url", metavar="URL")
    add.add_argument("--name", default="origin", help="the remote's name (default: origin)")
    add.set_defaults(handler=cmd_remote_add)
    show = actions.add_parser("show", help="the remote, branch and sync health")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=cmd_remote_show)

    p = sub.add_parser("sync", help="fetch, integrate and push: one memory on many machines")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_sync)


def cmd_remote_add(ctx: Any, args: argparse.Namespace) -> int:
    from kbmem.sync.engine import add_remote

    remote = add_remote(ctx.kb, args.url, args.name)
    print(printable(f"remote {remote.name}: {remote.url} (branch {remote.branch})"))
    if ctx.kb.settings.section("sync")["remote"] != remote.name:
        print(printable(f"note: kbmem.yaml syncs with sync.remote, not {remote.name!r}"))
    return 0


def cmd_remote_show(ctx: Any, args: argparse.Namespace) -> int:
    from kbmem.sync.background import sync_status

    status = sync_status(ctx.kb)
    if args.json:
        print(json_text(status.to_dict(), indent=1))
        return 0
    if not status.configured:
        print(printable(f"no remote {status.remote!r}; add one with 'kbmem remote add URL'"))
        return 0
    lines = [
        f"remote   {status.remote}  {status.url}",
        f"branch   {status.branch}",
        f"sync     {'on' if status.enabled else 'off'}, every "
        f"{ctx.kb.settings.section('sync')['interval_s']:g} s",
        f"ahead    {status.ahead}   behind {status.behind}   (as of the last fetch)",
        f"last     {status.last_sync or 'never'}",
    ]
    if status.last_error:
        lines.append(f"error    {status.last_error}")
    lines += [f"conflict {path}" for path in status.conflicts]
    lines += [f"rescued  {ref}" for ref in status.rescued]
    print(printable("\n".join(lines)))
    return 0


def cmd_sync(ctx: Any, args: argparse.Namespace) -> int:
    from kbmem.sync.engine import sync

    result = sync(ctx.kb)
    if args.json:
        print(json_text(result.to_dict(), indent=1))
        return 0
    i, o = result.moved_in, result.moved_out
    lines = [
        f"{result.action}: {result.remote}/{result.branch} at "
        f"{(result.head or 'nothing')[:12]} ({result.seconds:g} s)",
        f"in:  {i.sessions} sessions, {i.notes} notes, {i.turns} turns ({i.files} files)",
        f"out: {o.sessions} sessions, {o.notes} notes, {o.turns} turns ({o.files} files)",
    ]
    for s in result.sessions:
        lines.append(
            f"session {s['tenant']}/{s['session']} differed on both sides: kept {s['kept']}'s "
            f"version ({s['why']}); the other stays in history"
        )
    for path in result.conflicts:
        lines.append(f"conflict {path}: edited on both sides; both versions kept (see beside it)")
    for path in result.kept_edits:
        lines.append(f"kept {path}: edited on one side, deleted on the other")
    for ref in result.rescued:
        lines.append(f"rescued local commits that could not be joined under {ref}")
    print(printable("\n".join(lines)))
    return 0


# -- syncing beside a writer ------------------------------------------------------------------


def start_background_sync(
    kb: KnowledgeBase, on_pull: Callable[[], None] | None = None
) -> BackgroundSync | None:
    """Start syncing ``kb`` in the background beside a long-running writer (``serve``,
    ``mcp``, ``chat --no-tui``), saying so on stderr; ``on_pull`` (default: bring the indexes
    this machine has built up to HEAD) follows commits that arrive. None, with nothing
    started, when sync is off or git knows no remote."""
    from kbmem.sync.background import BackgroundSync

    worker = BackgroundSync(kb, on_pull=on_pull or (lambda: catch_up_indexes(kb)))
    if not worker.active():
        return None
    worker.start()
    status = worker.status()
    print(
        printable(
            f"kbmem: syncing with {status.remote} ({status.url}, branch {status.branch}) "
            f"every {worker.interval:g} s and after commits"
        ),
        file=sys.stderr,
        flush=True,
    )
    return worker


def finish_background_sync(worker: BackgroundSync | None) -> None:
    """Stop ``worker`` and send the last commits (bounded wait); say so when they stay here."""
    if worker is not None:
        report_after_write(worker.finish())


def sync_after_commits(kb: KnowledgeBase, head_before: str | None) -> None:
    """A one-shot writer's sync: when its commits moved HEAD past ``head_before`` and sync is
    on, one sync, waited for a bounded time; a remote that cannot be reached leaves the
    commits here (said on stderr), and the command still succeeds."""
    from kbmem.sync.background import sync_after_write

    if kb.head() != head_before:
        report_after_write(sync_after_write(kb))


def report_after_write(status: SyncStatus | None) -> None:
    if status is not None and status.last_error:
        print(
            printable(
                f"kbmem: sync: {status.last_error}; the commits are kept here "
                f"({status.ahead or 0} ahead of {status.remote}) and go with the next sync"
            ),
            file=sys.stderr,
        )


def catch_up_indexes(kb: KnowledgeBase) -> None:
    """Start bringing the tenant indexes this process holds open for ``kb`` up to HEAD, each
    in its own background thread (kbmem.index.resident): commits a sync pulled in become
    searchable without waiting for a search, and no index is opened (or another evicted) for
    it. An index not open catches up on its next search."""
    from kbmem.index import resident
    from kbmem.index.tenant import TenantIndex

    for index in resident.held():
        if isinstance(index, TenantIndex) and index.kb.root == kb.root:
            index.start_catch_up()
