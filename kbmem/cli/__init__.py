"""The ``kbmem`` command line. Each area registers its commands from its own module."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, Protocol

from kbmem.errors import KbmemError, ValidationError
from kbmem.heap import return_large_buffers
from kbmem.store.repository import KnowledgeBase
from kbmem.textutil import SURROGATE, printable

AREAS = ("kb", "research_cmds", "chat_cmds", "bench_cmds", "serve_cmds", "mcp_cmds", "sync_cmds")


@dataclass
class Context:
    """What every command gets: the knowledge base (opened on first use) and the tenant."""

    kb_path: Path
    tenant_arg: str | None
    _kb: KnowledgeBase | None = field(default=None, repr=False)
    _read_tenant: str | None = field(default=None, repr=False)

    @property
    def kb(self) -> KnowledgeBase:
        if self._kb is None:
            self._kb = KnowledgeBase(self.kb_path)
        return self._kb

    @property
    def tenant(self) -> str:
        from kbmem.ids import check_tenant

        if self.tenant_arg is not None:  # --tenant "" is an error, not the default
            return check_tenant(self.tenant_arg)
        return check_tenant(self.kb.settings.data["default_tenant"])

    @property
    def reading_tenant(self) -> str:
        """The tenant, for a command that only reads it: one that holds nothing is named on
        stderr when the command has done (see :meth:`empty_tenant_note`)."""
        self._read_tenant = self.tenant
        return self._read_tenant

    def empty_tenant_note(self) -> str | None:
        """What to say when the tenant a command read holds nothing: a misspelt ``--tenant``
        reads as an empty memory ("no hits"), not as a mistake, unless kbmem says so."""
        from kbmem.store.pagestore import tenant_exists, tenant_names

        tenant = self._read_tenant
        if tenant is None or tenant_exists(self.kb, tenant):
            return None
        others = ", ".join(tenant_names(self.kb)) or "none"
        return f"kbmem: tenant {tenant!r} holds nothing yet (tenants: {others})"


def add_common(parser: argparse.ArgumentParser, default: object = None) -> None:
    """The options every command takes, before or after its name (``kbmem --tenant acme
    pages`` and ``kbmem pages --tenant acme``). After it, they default to nothing at all, so
    that an option given before the name is not reset."""
    parser.add_argument(
        "--kb",
        type=Path,
        default=default,
        help="knowledge base folder (default: $KBMEM_KB, else the current folder)",
    )
    parser.add_argument(
        "--tenant",
        default=default,
        help="tenant to act for (default: the knowledge base's default_tenant)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=False if default is None else default,
        help="log debug detail",
    )


class Commands(Protocol):
    """What an area's ``register`` is given: where its commands are added."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


class Parser(argparse.ArgumentParser):
    """An argument parser whose error messages, which quote what was typed (``unrecognized
    arguments: ...``), reach the terminal made printable."""

    def error(self, message: str) -> NoReturn:
        super().error(printable(message))


class TerminalFormatter(logging.Formatter):
    """Log lines quote stored paths, exceptions and HTTP request lines: they reach the
    terminal made printable."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


class CommandParser(Parser):
    """The parser of one command (``pages``, ``bench``, ``bench locomo``): it takes the
    common options too, after the command's name. Subcommands get this class as well, since
    ``add_subparsers`` makes its parsers of the class of the parser it is called on."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        add_common(self, argparse.SUPPRESS)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="kbmem",
        description="A git-backed memory for agents: memorize sessions, research briefings, "
        "chat with provenance.",
    )
    add_common(parser)
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=CommandParser
    )
    import importlib

    for area in AREAS:
        try:
            module = importlib.import_module(f"{__name__}.{area}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{area}":
                raise
            continue
        module.register(sub)
    return parser


def argument_names(parser: argparse.ArgumentParser) -> dict[str, str]:
    """``{dest: name as typed}`` of every argument of ``parser`` and its commands: ``--tenant``
    for an option, ``query`` for a positional argument."""
    names: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                names.update(argument_names(sub))
        elif action.option_strings:
            names.setdefault(action.dest, max(action.option_strings, key=len))
        else:
            names.setdefault(action.dest, action.dest)
    return names


def check_text_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse an argument that is not UTF-8 text: Python keeps such bytes as lone surrogates,
    which reach a tokenizer, a journal or git only to fail there. A file name (a ``Path``)
    may be any bytes the file system takes."""
    for dest, value in vars(args).items():
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and SURROGATE.search(v) for v in values):
            name = argument_names(parser).get(dest, dest)
            raise ValidationError("is not UTF-8 text", name)


def main(argv: Sequence[str] | None = None) -> int:
    # Before anything large is allocated: a server, a sync or a chat then gives the buffers of
    # its embedding batches and request bodies back to the system when done with them.
    return_large_buffers()
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(TerminalFormatter("%(levelname)s: %(message)s"))
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING, handlers=[handler]
    )
    kb_path = args.kb or Path(os.environ.get("KBMEM_KB") or ".")
    ctx = Context(kb_path=kb_path, tenant_arg=args.tenant)
    try:
        check_text_arguments(parser, args)
        code = int(args.handler(ctx, args) or 0)
        note = ctx.empty_tenant_note()
        if note:
            print(printable(note), file=sys.stderr)
        return code
    except KbmemError as exc:
        # Messages quote bad ids and field values as they were given.
        print(f"kbmem: error: {printable(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("kbmem: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
