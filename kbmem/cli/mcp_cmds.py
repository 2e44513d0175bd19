"""The MCP server's command: ``kbmem mcp`` serves one tenant's memory to another agent over
stdio (see :mod:`kbmem.interfaces.mcp_sdk`)."""

from __future__ import annotations

import argparse
from typing import Any

from kbmem.cli import Commands
from kbmem.cli.sync_cmds import finish_background_sync, start_background_sync


def register(sub: Commands) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve the memory to another agent as an MCP server on stdin/stdout",
        description="A Model Context Protocol server on stdio for --tenant (default: the "
        "knowledge base's default_tenant). An MCP client starts it; stdout carries only "
        "protocol messages, logs go to stderr. Open chats are committed when stdin closes "
        "or on SIGTERM.",
    )
    p.add_argument("--model", help="litellm model for the llm engine and chats")
    p.set_defaults(handler=cmd_mcp)


def cmd_mcp(ctx: Any, args: argparse.Namespace) -> int:
    from kbmem.interfaces.mcp_sdk.stdio import serve_stdio
    from kbmem.interfaces.service import Memory

    # Opened before serving, so that a missing knowledge base or a bad tenant is a plain
    # error on stderr and an exit code, which is what a client shows when a server fails.
    memory = Memory(ctx.kb, ctx.tenant, model=args.model)
    syncing = start_background_sync(ctx.kb)  # None: no remote, or sync off
    try:
        return serve_stdio(memory)
    finally:
        finish_background_sync(syncing)
