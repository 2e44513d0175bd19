"""kbmem as a Model Context Protocol server on stdio (``kbmem mcp``): one tenant's memory as
tools for another agent.

The transport is MCP's stdio transport: newline-delimited JSON-RPC 2.0, one message per line
on stdin and on stdout. Stdout must carry nothing but those messages, and a library that
prints (a progress bar, a warning, litellm on import) would break the client's parser, so
:func:`serve_stdio` keeps the real stdout for the protocol alone and points file descriptor 1
at stderr for everything else. The server handles one request at a time, in order: each tool
call is already parallel inside where that pays (research runs its searches in parallel), and
the agent on the other end waits for each answer anyway.

Written by hand rather than with the ``mcp`` SDK: a tools-only server needs four methods, and
the SDK would bring an async stack and a dependency tree of its own.

The server acts for the one tenant it was started for; no tool takes a tenant. Errors of a
tool (a :class:`~kbmem.errors.KbmemError`, or arguments that do not fit the tool's schema) are
tool results with ``isError`` and a message naming the field, so the calling model can read
them and try again; only protocol mistakes are JSON-RPC errors.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, BinaryIO

from kbmem.config import MAX_REQUEST_CHARS
from kbmem.errors import KbmemError, PageFormatError, ValidationError
from kbmem.interfaces.service import (
    ENGINES,
    HISTORY_WINDOW,
    MAX_OFFSET,
    MAX_WINDOW,
    SEARCH_TOOLS,
    WINDOW,
    Memory,
    check_text,
    close_idle_chats_until,
    kbmem_version,
    recover_chats,
    whole_number,
)

log = logging.getLogger(__name__)

# Newest first: a client asking for another version gets the newest, and decides.
PROTOCOL_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


# -- tools --------------------------------------------------------------------------------------

REVISION = {
    "type": "string",
    "description": "A commit id, or HEAD with ~N or ^N steps back ('HEAD~3'), to read the "
    "memory as it was then. Leave out for now.",
}

TURN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "One turn, stored verbatim.",
    "properties": {
        "role": {
            "type": "string",
            "minLength": 1,
            "description": "'user', 'assistant', ...; the speaker when metadata.speaker is "
            "not given.",
        },
        "content": {"type": "string", "description": "What was said, verbatim."},
        "timestamp": {
            "type": "string",
            "description": "When it was said, ISO 8601 (2026-03-02T09:15:00). Research reads "
            "dates from it.",
        },
        "metadata": {
            "type": "object",
            "description": "Free-form. 'speaker' is the person's name (searched by and "
            "shown in citations); 'id' is the turn id (default t1, t2, ...).",
        },
    },
    "required": ["role", "content"],
    "additionalProperties": False,
}

SESSION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A conversation in the Summit shape.",
    "properties": {
        "turns": {
            "type": "array",
            "minItems": 1,
            "items": TURN_SCHEMA,
            "description": "The conversation's turns, in order.",
        },
        "sessionId": {
            "type": "string",
            "description": "Stable id: letters, digits, '.', '_', '-' (up to 128). The same id "
            "with changed turns writes new versions of its pages; the same content again "
            "changes nothing. Default: derived from the title and the content.",
        },
        "title": {"type": "string", "description": "What the session was, in a few words."},
        "tenantId": {
            "type": "string",
            "description": "Leave out. If given it must be this server's tenant, or the "
            "session is refused.",
        },
        "agentId": {"type": "string", "description": "The agent that took part, if any."},
        "classification": {
            "type": "string",
            "description": "Sensitivity label kept in the page header (default 'internal').",
        },
        "policyTags": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Policy labels kept in the page header.",
        },
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Topics, kept in the page header.",
        },
        "metadata": {"type": "object", "description": "Free-form, kept in the session record."},
        "originRunId": {"type": "string", "description": "The run that produced the session."},
        "requestIntent": {
            "type": "string",
            "description": "What the session was for, kept in the page header.",
        },
    },
    "required": ["turns"],
    "additionalProperties": False,
}


LIMIT = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_WINDOW,
    "description": f"Most items to return (default {WINDOW}).",
}
OFFSET = {
    "type": "integer",
    "minimum": 0,
    "maximum": MAX_OFFSET,
    "description": "Items to skip: the next_offset of the previous call, to read on.",
}


@dataclass(frozen=True)
class Tool:
    """One MCP tool: what ``tools/list`` shows, and the :class:`Memory` call behind it."""

    name: str
    title: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    run: Callable[[Memory, dict[str, Any]], dict[str, Any]]
    read_only: bool = True

    @property
    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": self.properties,
            "required": list(self.required),
            "additionalProperties": False,
        }

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.read_only,
                "destructiveHint": False,
                "openWorldHint": False,
            },
        }


def _research(memory: Memory, a: dict[str, Any]) -> dict[str, Any]:
    return memory.research(
        a["request"],
        max_pages=a.get("max_pages"),
        depth=a.get("depth"),
        max_tokens=a.get("max_tokens"),
        engine=a.get("engine"),
    )


TOOLS: tuple[Tool, ...] = (
    Tool(
        "research",
        "Research the memory",
        "Answer a question from memory with a cited briefing: the researcher plans searches, "
        "runs them, reads the best pages and checks what is still missing. Returns "
        "executiveSummary, keyFacts (each ending with its [page:lines] citation, with "
        "superseded values marked), openQuestions, and evidence: verbatim excerpts, each with "
        "the page, line range and commit it came from. Prefer this over search for any "
        "question; quote the evidence rather than guessing.",
        {
            "request": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_REQUEST_CHARS,
                "description": "The question or task, in plain words ('Who owns the "
                "scheduler?', 'What did we decide about the data store, and why?').",
            },
            "max_pages": {
                "type": "integer",
                "minimum": 1,
                "maximum": 32,
                "description": "Most pages to read (default 8).",
            },
            "depth": {
                "type": "integer",
                "minimum": 0,
                "maximum": 5,
                "description": "Reflection rounds that search again for what is missing "
                "(default 2).",
            },
            "max_tokens": {
                "type": "integer",
                "minimum": 50,
                "maximum": 20_000,
                "description": "Budget of the briefing (default 1500).",
            },
            "engine": {
                "type": "string",
                "enum": list(ENGINES),
                "description": "'offline' (deterministic, the default) or 'llm' (the model "
                "the server was started with plans and integrates; needs one).",
            },
        },
        ("request",),
        _research,
    ),
    Tool(
        "search",
        "Search intervals",
        "One-shot retrieval without the research loop: the best-matching intervals (a turn "
        "of a conversation, or a paragraph of a note) with their text, page, line range, "
        "commit and score. Use it to find where something is said; use research to answer.",
        {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_REQUEST_CHARS,
                "description": "What to look for.",
            },
            "tool": {
                "type": "string",
                "enum": list(SEARCH_TOOLS),
                "description": "'bm25' for exact words and names, 'dense' for meaning, "
                "'hybrid' (default) for both.",
            },
            "k": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100,
                "description": "How many hits (default 10).",
            },
        },
        ("query",),
        lambda m, a: m.search(a["query"], a.get("tool", "hybrid"), a.get("k", 10)),
    ),
    Tool(
        "read_page",
        "Read a page",
        "A whole page as committed: its YAML header (title, dates, memo, tags, turns) and its "
        "text, with the commit read. Page ids come from list_pages, search hits and research "
        "evidence: '<session-id>/<n>' for a memorized session, 'notes/<file>.md' for a note. "
        "A page whose header was broken by hand is an error naming the problem; with raw, it "
        "comes as stored (header null, problem said), to repair it.",
        {
            "page_id": {
                "type": "string",
                "minLength": 1,
                "description": "The page id, e.g. '2026-03-02-welcome-and-offsite/1' or "
                "'notes/team-roster.md'.",
            },
            "at": REVISION,
            "raw": {
                "type": "boolean",
                "description": "Give a page whose header cannot be read as stored, with the "
                "problem, instead of an error (default false).",
            },
        },
        ("page_id",),
        lambda m, a: m.page(a["page_id"], a.get("at"), a.get("raw", False)),
    ),
    Tool(
        "list_pages",
        "List pages",
        "The pages in memory, ordered by id: id, title, date, session id and the one-line "
        "memo of what the session was about (problem: why a page's header cannot be read, "
        f"else null), {WINDOW} at a time; total counts them all, and "
        "next_offset (null at the end) reads on. Pass the commit it returns as 'at' when "
        "reading on, so that sessions memorized meanwhile do not shift the list. Good for an "
        "overview before reading pages; to find something, use research or search.",
        {"at": REVISION, "limit": LIMIT, "offset": OFFSET},
        (),
        lambda m, a: m.list_pages(a.get("at"), a.get("limit"), a.get("offset")),
    ),
    Tool(
        "page_history",
        "Page history",
        "The git history of one page (each version's commit, date, author, subject and whole "
        f"message), or without page_id the memory's own history, newest first, {HISTORY_WINDOW} "
        "commits unless limit says otherwise (more: true when there are older ones; pass "
        "next_before as before to read on). Read an older version with read_page and 'at'.",
        {
            "page_id": {
                "type": "string",
                "minLength": 1,
                "description": "The page id; leave out for the history of the whole memory.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_WINDOW,
                "description": f"Most commits to list, newest first (default {HISTORY_WINDOW}).",
            },
            "before": {
                "type": "string",
                "minLength": 4,
                "maxLength": 40,
                "description": "List only commits older than this one: the next_before of "
                "the previous call.",
            },
        },
        (),
        lambda m, a: m.history(a.get("page_id"), a.get("limit"), a.get("before")),
    ),
    Tool(
        "memorize_session",
        "Memorize a session",
        "Store a conversation in memory, losslessly: its turns become pages (verbatim, with a "
        "header and a memo), committed to git in one commit, and searchable at once. Give each "
        "turn's speaker in metadata.speaker and its time in timestamp: research finds people "
        "and dates by them. Returns the session id, the pages written, the commit, and whether "
        "this session created the tenant (tenantCreated).",
        {"session": SESSION_SCHEMA},
        ("session",),
        lambda m, a: m.ingest(a["session"]),
        read_only=False,
    ),
    Tool(
        "chat",
        "Chat with the memory",
        "One turn with kbmem's own chat agent, which researches memory before it answers and "
        "cites pages. Returns the answer, its citations and chat_id: pass chat_id back to "
        "continue the same chat (an id no chat has is an error; leave it out to start a new "
        "chat). Every turn is recorded with what it read (see audit_turn) and committed to "
        "git in batches and when this server stops.",
        {
            "message": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_REQUEST_CHARS,
                "description": "What to say.",
            },
            "chat_id": {
                "type": "string",
                "minLength": 1,
                "description": "Continue this chat: the chat_id an earlier call returned. "
                "Leave out to start a new chat.",
            },
        },
        ("message",),
        lambda m, a: m.send(a.get("chat_id"), a["message"]),
        read_only=False,
    ),
    Tool(
        "list_turns",
        "List chat turns",
        "Chat turns, committed and pending, oldest first: turn id ('<chat-id>/<n>'), "
        f"question, status, time; {WINDOW} at a time (total counts them all, next_offset, "
        "null at the end, reads on).",
        {
            "chat_id": {
                "type": "string",
                "minLength": 1,
                "description": "Only this chat's turns; leave out for all chats.",
            },
            "limit": LIMIT,
            "offset": OFFSET,
        },
        (),
        lambda m, a: m.list_turns(a.get("chat_id"), a.get("limit"), a.get("offset")),
    ),
    Tool(
        "audit_turn",
        "Audit a chat turn",
        "What one chat turn's answer rested on: the research calls it made, the intervals it "
        "read (resolved at the commits cited), its reasoning and its answer.",
        {
            "turn_id": {
                "type": "string",
                "minLength": 1,
                "description": "'<chat-id>/<n>', as chat and list_turns return it.",
            }
        },
        ("turn_id",),
        lambda m, a: m.audit(a["turn_id"]),
    ),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}


# -- arguments ---------------------------------------------------------------------------------

_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "boolean": "true or false",
    "object": "an object",
    "array": "an array",
}


def json_type(value: Any) -> str:
    """The JSON name of a Python value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    for name, kind in (("integer", int), ("number", float), ("string", str)):
        if isinstance(value, kind):
            return name
    return "array" if isinstance(value, list) else "object"


def check_arguments(schema: dict[str, Any], value: Any, where: str = "") -> Any:
    """``value`` checked against the subset of JSON Schema the tools use (type, enum,
    minLength, maxLength, minimum, maximum, minItems, items, properties, required,
    additionalProperties); raises :class:`ValidationError` naming the field
    (``session.turns[0].content``). Returns the value with optional fields given as null
    left out, and integral floats (``5.0``, as some clients send numbers) made integers."""
    field = where or "arguments"
    kind = schema.get("type")
    if kind == "integer":
        value = whole_number(value)
    if kind is not None and json_type(value) != kind:
        raise ValidationError(f"must be {_TYPE_NAMES[kind]}, got {json_type(value)}", field)
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(repr(v) for v in schema["enum"])
        raise ValidationError(f"must be one of {allowed}, got {value!r}", field)
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        raise ValidationError("must not be empty", field)
    if isinstance(value, str) and len(value) > schema.get("maxLength", len(value)):
        raise ValidationError(f"longer than {schema['maxLength']} characters", field)
    if kind == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            raise ValidationError(f"must be between {low} and {high}, got {value}", field)
    if kind == "array":
        if len(value) < schema.get("minItems", 0):
            raise ValidationError(f"needs at least {schema['minItems']} item(s)", field)
        if "items" in schema:
            value = [
                check_arguments(schema["items"], v, f"{field}[{i}]") for i, v in enumerate(value)
            ]
    if kind == "object" and "properties" in schema:
        value = _check_object(schema, value, f"{where}." if where else "")
    return value


def _check_object(schema: dict[str, Any], value: dict[str, Any], prefix: str) -> dict[str, Any]:
    properties: dict[str, Any] = schema["properties"]
    required = schema.get("required", [])
    # An optional field sent as null means "not given": models fill every field they see.
    value = {k: v for k, v in value.items() if v is not None or k in required}
    if schema.get("additionalProperties") is False:
        for key in value:
            if key not in properties:
                expected = ", ".join(properties) or "none"
                raise ValidationError(
                    f"is not a parameter here (expected: {expected})", prefix + key
                )
    for key in required:
        if key not in value:
            raise ValidationError("is required", prefix + key)
    return {
        k: check_arguments(properties[k], v, prefix + k) if k in properties else v
        for k, v in value.items()
    }


# -- the protocol ------------------------------------------------------------------------------


class RpcError(Exception):
    """A JSON-RPC error answer (a protocol mistake, not a tool's failure)."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def error_reply(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def _valid_id(value: Any) -> bool:
    # MCP: a string or an integer, never null.
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def tool_result(data: dict[str, Any]) -> dict[str, Any]:
    """A tool's answer: the JSON as text for any client, and as structured content."""
    return {
        "content": [{"type": "text", "text": json.dumps(data, ensure_ascii=False)}],
        "structuredContent": data,
        "isError": False,
    }


def tool_error(message: str, kind: str, field: str | None = None) -> dict[str, Any]:
    """A tool's failure as the calling model reads it: a sentence naming the problem."""
    return {
        "content": [{"type": "text", "text": message}],
        "structuredContent": {"error": {"type": kind, "message": message, "field": field}},
        "isError": True,
    }


class McpServer:
    """The JSON-RPC side of the server, over any line source and byte sink (the process's
    stdio in :func:`serve_stdio`). ``on_initialize`` runs once the client has said hello:
    the place to start slow preparation that the first tool call will need."""

    def __init__(
        self,
        memory: Memory,
        output: BinaryIO,
        on_initialize: Callable[[], None] | None = None,
    ):
        self.memory = memory
        self.output = output
        self.on_initialize = on_initialize
        self.methods: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "initialize": self.initialize,
            "ping": lambda _params: {},
            "tools/list": lambda _params: {"tools": [t.describe() for t in TOOLS]},
            "tools/call": self.call_tool,
        }

    def serve(self, lines: Iterable[bytes]) -> None:
        """Answer each line in turn, until the lines end."""
        for line in lines:
            reply = self.handle_line(line)
            if reply is not None:
                self.send(reply)

    def send(self, message: Any) -> None:
        # json.dumps escapes every newline inside strings, so a message is one line.
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        self.output.write(text.encode("utf-8", "replace") + b"\n")
        self.output.flush()

    def handle_line(self, line: bytes) -> Any:
        """The reply to one line (None for a notification, a response or a blank line)."""
        if not line.strip():
            return None
        try:
            # Decoded here, not by json.loads: given bytes, it would take UTF-16 and UTF-32
            # too, and the transport is UTF-8.
            message = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return error_reply(None, PARSE_ERROR, f"Parse error: {exc}")
        if isinstance(message, list):  # a batch (JSON-RPC; MCP 2025-03-26)
            if not message:
                return error_reply(None, INVALID_REQUEST, "an empty batch")
            replies = [r for r in map(self.handle_message, message) if r is not None]
            return replies or None
        return self.handle_message(message)

    def handle_message(self, message: Any) -> dict[str, Any] | None:
        if not isinstance(message, dict):
            return error_reply(None, INVALID_REQUEST, "a message must be a JSON object")
        method = message.get("method")
        if "id" not in message and isinstance(method, str):
            self.notified(method)  # a notification is never answered, whatever it says
            return None
        if "method" not in message and ("result" in message or "error" in message):
            return None  # a response: this server sends no requests, so none is awaited
        msg_id = message.get("id")
        if not _valid_id(msg_id):
            return error_reply(None, INVALID_REQUEST, "id must be a string or an integer")
        if message.get("jsonrpc") != "2.0":
            return error_reply(msg_id, INVALID_REQUEST, 'jsonrpc must be "2.0"')
        if not isinstance(method, str):
            return error_reply(msg_id, INVALID_REQUEST, "method must be a string")
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return error_reply(msg_id, INVALID_PARAMS, "params must be an object")
        handler = self.methods.get(method)
        if handler is None:
            return error_reply(msg_id, METHOD_NOT_FOUND, f"Method not found: {method}")
        try:
            result = handler(params)
        except RpcError as exc:
            return error_reply(msg_id, exc.code, exc.message)
        except Exception:
            log.exception("%s failed", method)
            return error_reply(msg_id, INTERNAL_ERROR, "internal error; see the server's log")
        return {"jsonrpc": "2.0", "id": msg_id, "result": result}

    def notified(self, method: str) -> None:
        # Nothing to do for any: notifications/initialized changes nothing for a server that
        # answers requests before it too (as a lenient peer should), and notifications/cancelled
        # comes after the request it cancels was answered, since requests are taken in order.
        log.debug("notification %s", method)

    def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        asked = params.get("protocolVersion")
        if self.on_initialize is not None:
            self.on_initialize()
            self.on_initialize = None
        return {
            "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "kbmem", "title": "kbmem memory", "version": kbmem_version()},
            "instructions": instructions(self.memory.tenant),
        }

    def call_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str):
            raise RpcError(INVALID_PARAMS, "params.name must be the name of a tool")
        tool = TOOLS_BY_NAME.get(name)
        if tool is None:
            raise RpcError(
                INVALID_PARAMS, f"unknown tool {name!r}; tools: {', '.join(TOOLS_BY_NAME)}"
            )
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, "params.arguments must be an object")
        try:
            for key, value in arguments.items():  # a field named as the schema names it
                check_text(key, "arguments")
                check_text(value, key)
            checked = check_arguments(tool.input_schema, arguments)
            return tool_result(tool.run(self.memory, checked))
        except KbmemError as exc:
            if isinstance(exc, PageFormatError) and name == "read_page":
                exc.hint = "read_page with raw: true gives the page as stored, to repair it"
            message = f"{name}: {exc}" + (f" ({exc.hint})" if exc.hint else "")
            return tool_error(message, type(exc).__name__, getattr(exc, "field", None))
        except Exception:
            log.exception("tool %s failed", name)
            return tool_error(
                f"{name}: internal error in kbmem; the server's log (stderr) has the details",
                "InternalError",
            )


def instructions(tenant: str) -> str:
    """What the client's model is told the server is."""
    return (
        f"kbmem: a long-term memory of past conversations and notes (tenant {tenant!r}), "
        "kept as a git repository of markdown pages that people can read and audit. To "
        "answer a question from memory, call research: it returns a briefing whose every "
        "excerpt cites a page, a line range and a commit; quote those citations. search finds "
        "where something is said, read_page reads a page whole (also as it was at an older "
        "commit), list_pages and page_history give an overview. memorize_session stores a "
        "conversation so that later research finds it. chat talks to kbmem's own cited agent; "
        "list_turns and audit_turn show what each chat answer rested on. Statements that "
        "were corrected later are marked superseded in key facts: prefer the correction."
    )


# -- stdio ---------------------------------------------------------------------------------------


class _Stop(Exception):
    """Raised by the SIGTERM handler to leave a blocking read of stdin."""


def serve_stdio(memory: Memory) -> int:
    """Serve ``memory`` on this process's stdin and stdout until EOF or SIGTERM, then close it
    (committing every open chat's pending turns). Meant for a process that exits afterwards:
    it rewires file descriptors 0 and 1 for good."""
    # The protocol keeps its own copies of the pipes. Descriptor 1 then goes to stderr, so
    # nothing else this process or its children print can reach the client's parser, and
    # descriptor 0 reads /dev/null, so no child (git) can consume a request.
    protocol_in = os.fdopen(os.dup(0), "rb")
    protocol_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process

    reading = threading.Event()
    stopping = threading.Event()

    def on_signal(_signum: int, _frame: Any) -> None:
        stopping.set()
        if reading.is_set():  # waiting for a line: leave the read now
            raise _Stop
        # otherwise the request in hand is answered first (then lines() ends), or closing
        # is under way

    def lines() -> Iterable[bytes]:
        while True:
            reading.set()  # before the check: a signal from here on raises _Stop
            try:
                if stopping.is_set():
                    return
                line = protocol_in.readline()
            finally:
                reading.clear()
            if not line:
                return
            yield line

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    recover_chats(memory.kb)  # turns a killed run left in the journal
    idle_stop = threading.Event()
    threading.Thread(
        target=close_idle_chats_until,
        args=(idle_stop, lambda: [memory]),
        name="kbmem-idle-chats",
        daemon=True,
    ).start()
    preload = threading.Thread(target=_preload_embedder, name="kbmem-preload", daemon=True)
    server = McpServer(memory, protocol_out, on_initialize=preload.start)

    print(f"kbmem: MCP server for tenant {memory.tenant!r} on stdio", file=sys.stderr, flush=True)
    try:
        server.serve(lines())
    except _Stop:
        pass
    except BrokenPipeError:
        log.info("the client closed stdout")
    with contextlib.suppress(OSError):  # the client is gone; nobody waits for the last reply
        protocol_out.close()
    print("kbmem: MCP server stopping; committing open chats", file=sys.stderr, flush=True)
    idle_stop.set()
    try:
        if preload.is_alive():
            # A thread still importing torch when the interpreter shuts down can crash it.
            preload.join(timeout=120)
        memory.close()
    except KbmemError as exc:
        print(f"kbmem: error: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0


def _preload_embedder() -> None:
    """Load the embedding model while the client lists tools, so that the first search does
    not wait for it (the embedder sets ``HF_HUB_OFFLINE`` and friends as it loads)."""
    try:
        from kbmem.index import embedder

        embedder.preload()
    except Exception:
        log.warning("could not preload the embedding model", exc_info=True)
