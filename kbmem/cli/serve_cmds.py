"""The HTTP API's commands: serve, and the tokens that let a client in."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import signal
import socket
import sys
import threading
from errno import EADDRNOTAVAIL
from typing import Any

from kbmem.cli import Commands
from kbmem.cli.sync_cmds import finish_background_sync, start_background_sync
from kbmem.errors import ValidationError
from kbmem.textutil import json_text, printable

DEFAULT_PORT = 8765


def register(sub: Commands) -> None:
    p = sub.add_parser("serve", help="serve the memory to other agents over HTTP (JSON API)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    p.add_argument("--model", help="litellm model for the llm engine and chats")
    p.add_argument("--quiet", action="store_true", help="do not log each request")
    p.set_defaults(handler=cmd_serve)

    p = sub.add_parser("token", help="API tokens: each lets a client act for one tenant")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    q = actions.add_parser("create", help="a new token for --tenant (printed once)")
    q.add_argument("--name", default="", help="what the token is for, to tell it apart later")
    q.add_argument("--json", action="store_true")
    q.set_defaults(handler=cmd_token_create)
    q = actions.add_parser("list", help="the tenant's tokens (ids and names, never the tokens)")
    q.add_argument("--json", action="store_true")
    q.set_defaults(handler=cmd_token_list)
    q = actions.add_parser("revoke", help="stop a token working (servers notice at once)")
    q.add_argument("id")
    q.set_defaults(handler=cmd_token_revoke)


def cmd_serve(ctx: Any, args: argparse.Namespace) -> int:
    from kbmem.interfaces.server import MemoryServer
    from kbmem.interfaces.tokens import TokenStore
    from kbmem.telemetry import configure_tracing

    if not 0 <= args.port <= 65535:
        raise ValidationError("must be between 0 and 65535", "--port")
    kb = ctx.kb
    logging.getLogger("kbmem.interfaces.app").setLevel(
        logging.WARNING if args.quiet else logging.INFO
    )
    if not TokenStore(kb.state_dir).list():
        print(
            "kbmem: no API tokens yet, so every request will be refused; create one with "
            "'kbmem token create --tenant <tenant>'",
            file=sys.stderr,
        )
    if not _is_loopback(args.host):
        print(
            f"kbmem: warning: listening on {printable(args.host)} in plain HTTP; tokens cross the "
            "network unencrypted unless a TLS proxy sits in front",
            file=sys.stderr,
        )
    try:
        server = MemoryServer((args.host, args.port), kb, model=args.model or kb.settings.model)
    except OSError as exc:
        # An unknown name or an address this machine does not have is the host's fault.
        host_fault = isinstance(exc, socket.gaierror) or exc.errno == EADDRNOTAVAIL
        field = "--host" if host_fault else "--port"
        raise ValidationError(
            printable(f"cannot listen on {args.host}:{args.port}: {exc.strerror}"), field
        ) from None

    def stop(_signum: int, _frame: Any) -> None:
        # shutdown() waits for serve_forever to return, so it must run on another thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    # uvicorn's own handlers are off (the server is also run in threads): both signals stop
    # it gracefully, answers under way finishing first.
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    serving = f"kbmem: serving {kb.root} at {server.url} (Ctrl-C to stop)"
    print(printable(serving), file=sys.stderr, flush=True)
    state = "on" if server.gam_enabled else "off (they answer 503)"
    print(f"kbmem: MEMORY_GAM_ENABLED is {state}: the /memory/* routes", file=sys.stderr)
    print(f"kbmem: MCP (Streamable HTTP) at {server.url}/mcp", file=sys.stderr)
    loop = "uvloop" if server.loop_factory else "asyncio"
    print(f"kbmem: event loop {loop} (KBMEM_HTTP_LOOP: auto, uvloop, asyncio)", file=sys.stderr)
    if configure_tracing():
        print("kbmem: sending traces to the OTEL_* exporter", file=sys.stderr, flush=True)
    syncing = start_background_sync(kb)  # None: no remote, or sync off
    try:
        server.serve_forever()  # SIGINT and SIGTERM stop it through stop() above
    finally:
        print("kbmem: stopping; committing open chats", file=sys.stderr)
        server.server_close()
        finish_background_sync(syncing)
    return 0


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cmd_token_create(ctx: Any, args: argparse.Namespace) -> int:
    from kbmem.interfaces.tokens import TokenStore
    from kbmem.store.pagestore import tenant_exists, tenant_names

    kb, tenant = ctx.kb, ctx.tenant
    exists = tenant_exists(kb, tenant)
    token, info = TokenStore(kb.state_dir).create(tenant, args.name)
    if not exists:
        # Legitimate (an agent may start by ingesting), but also what a misspelt --tenant
        # gives: a token that sees an empty memory.
        others = ", ".join(tenant_names(kb)) or "none"
        print(
            printable(
                f"kbmem: warning: tenant {tenant!r} holds no pages yet; the token works, and "
                f"its first ingested session creates the tenant (existing tenants: {others})"
            ),
            file=sys.stderr,
        )
    if args.json:
        print(json_text({**info.public(), "token": token, "tenant_exists": exists}))
        return 0
    print(token)
    print(
        f"kbmem: token {info.id} for tenant {info.tenant!r}; it is shown only now, keep it "
        "secret (send it as 'Authorization: Bearer <token>')",
        file=sys.stderr,
    )
    return 0


def cmd_token_list(ctx: Any, args: argparse.Namespace) -> int:
    from kbmem.interfaces.tokens import TokenStore

    tokens = TokenStore(ctx.kb.state_dir).list(ctx.tenant)
    if args.json:
        print(json_text([t.public() for t in tokens], indent=1))
        return 0
    if not tokens:
        print("no tokens", file=sys.stderr)
    for t in tokens:
        print(printable(f"{t.id}\t{t.created_at}\t{t.name}"))
    return 0


def cmd_token_revoke(ctx: Any, args: argparse.Namespace) -> int:
    from kbmem.interfaces.tokens import TokenStore

    store = TokenStore(ctx.kb.state_dir)
    mine = {t.id for t in store.list(ctx.tenant)}
    if args.id not in mine:
        # Another tenant's token ids are not this tenant's to see or revoke.
        from kbmem.errors import NotFound

        raise NotFound(f"tenant {ctx.tenant!r} has no API token with id {args.id!r}")
    info = store.revoke(args.id)
    print(printable(f"revoked token {info.id} ({info.name or 'no name'})"), file=sys.stderr)
    return 0
