"""kbmem's memory as an MCP server on the official ``mcp`` SDK: the tools, resources and
prompts, whatever the transport (stdio in :mod:`.stdio`, Streamable HTTP in :mod:`.http`).

The SDK speaks the protocol: version negotiation (every version it supports, the newest
first, and the spec's error for one it does not), pings answered while a tool runs,
cancellation, pagination cursors. This module adds what is kbmem's:

- Tool work runs in a worker thread (``anyio.to_thread``), so the event loop keeps answering
  pings and reading cancellations while a research or an index build runs.
- A long call is never silent: the research trace and the index build report progress to a
  client that asked for it (``_meta.progressToken``).
- A cancelled call stops: the worker sees a :class:`threading.Event` at its next step (the
  research's next trace event, the index build's next batch) and raises ``Cancelled``;
  research writes nothing, and a stopped index build keeps the live index as it was.
- The index is brought to HEAD in the background from the start (:class:`Readiness`); a
  call that needs it meanwhile waits with progress for a while, then answers with an error
  saying how far the build is, which the calling model can act on (try again shortly).

Errors of a tool (a :class:`~kbmem.errors.KbmemError`, or arguments that do not fit the
tool's schema) are tool results with ``isError`` and a message naming the field as the schema
names it (``session.turns[0].content``); only protocol mistakes are JSON-RPC errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import anyio
import anyio.to_thread
import mcp_types as types
import pydantic
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError

from kbmem.errors import Cancelled, KbmemError, NotFound, PageFormatError
from kbmem.interfaces import schema as m
from kbmem.interfaces.service import Memory, check_text, health, kbmem_version
from kbmem.store.pagestore import tenant_prefix
from kbmem.sync.background import sync_active

log = logging.getLogger(__name__)

# How long a call that needs the index waits for the background build, reporting progress,
# before it answers "indexing, N of M done": well inside the 60 s most clients allow a call.
READY_WAIT = 20.0
# Seconds between a call's progress notifications: the first goes at once (a long call is
# never silent), then at most one per this; a warm research (~70 ms, 16 trace steps) sends one.
PROGRESS_EVERY = 0.5
RESOURCE_PAGE = 100  # resources per resources/list page
RESOURCE_NOT_FOUND = -32002  # the spec's code for resources/read of an unknown resource
# Listed only when the memory syncs with a git remote (docs/sync.md).
STATUS_RESOURCE = types.Resource(
    uri="kbmem://status",
    name="status",
    title="Sync health",
    description="This memory's sync with its git remote: ahead/behind, last sync, last error, "
    "conflicts (JSON, as the HTTP API's health).",
    mime_type="application/json",
)

MemoryFor = Callable[[ServerRequestContext[Any, Any]], Memory]


# -- readiness ----------------------------------------------------------------------------------


class Readiness:
    """The background preparation of one tenant's memory: load the embedding model, bring
    the index to HEAD (reporting how many intervals are done), and read it once. Calls that
    search wait for it; everything else (pages, history, memorizing) does not need it."""

    def __init__(self, memory: Memory):
        self.memory = memory
        self.ready = threading.Event()
        self.stop = threading.Event()
        self.phase = "starting"
        self.done = 0
        self.total = 0
        self.error: str | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start preparing (once; later calls do nothing)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=f"kbmem-ready-{self.memory.tenant}", daemon=True
                )
                self._thread.start()

    def close(self, timeout: float = 120) -> None:
        """Stop a build under way (it keeps the live index as it was) and wait for the
        thread: a thread still importing torch when the interpreter shuts down can crash it."""
        self.stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def _run(self) -> None:
        try:
            from kbmem.index import embedder

            self.phase = "loading the embedding model"
            embedder.preload()
            self.phase = "indexing"
            index = self.memory.toolkit.index
            index.ensure_synced(progress=self._progress, cancel=self.stop)
            self.phase = "warming the index"
            index.warm(self.stop)
            self.phase = "ready"
        except Cancelled:
            self.phase = "stopped"
        except Exception as exc:
            # The call that needs the index then syncs it itself and reports what fails.
            log.warning("preparing the index failed", exc_info=True)
            self.error = str(exc)
        finally:
            self.ready.set()

    def status(self) -> str:
        """Where the preparation is, in words a calling model can act on."""
        if self.phase == "indexing" and self.total:
            return f"indexing, {self.done} of {self.total} intervals done"
        return self.phase

    async def wait(self, ctx: ServerRequestContext[Any, Any], limit: float) -> str | None:
        """Wait up to ``limit`` seconds for the preparation, reporting progress; None once
        ready, else the status to answer with."""
        started = time.monotonic()
        while not self.ready.is_set():
            if time.monotonic() - started >= limit:
                return self.status()
            total = float(self.total) if self.phase == "indexing" and self.total else None
            await ctx.session.report_progress(float(self.done), total, self.status())
            await anyio.sleep(PROGRESS_EVERY)
        return None


# -- tools ---------------------------------------------------------------------------------------


class ProgressPacer:
    """Which of a call's progress reports to send: the first at once, then none until
    ``every`` seconds have passed since the last one sent (what came between is summed up
    by the next: progress only grows). Each report sent is a JSON-RPC message through the
    transport's framing and a hop to the event loop, and a research reports every step of
    its trace."""

    def __init__(self, every: float = PROGRESS_EVERY, clock: Callable[[], float] = time.monotonic):
        self.every = every
        self.clock = clock
        self._last: float | None = None

    def due(self) -> bool:
        now = self.clock()
        if self._last is not None and now - self._last < self.every:
            return False
        self._last = now
        return True


@dataclass(frozen=True)
class Work:
    """What a tool's worker thread gets: the memory, the checked arguments, a cancel flag
    and a progress sink (``progress(done, total_or_None, message)``)."""

    memory: Memory
    args: dict[str, Any]
    cancel: threading.Event
    progress: Callable[[float, float | None, str], None]


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool: what ``tools/list`` shows, and the :class:`Memory` call behind it."""

    name: str
    title: str
    description: str
    arguments: type[m.Arguments]
    result: type[m.Result]
    run: Callable[[Work], dict[str, Any]]
    read_only: bool = True
    idempotent: bool = True
    searches: bool = False  # needs the index at HEAD

    def describe(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=_schema(self.arguments),
            output_schema=_schema(self.result),
            annotations=types.ToolAnnotations(
                title=self.title,
                read_only_hint=self.read_only,
                destructive_hint=False,
                idempotent_hint=self.idempotent,
                open_world_hint=False,
            ),
        )


def _schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    return schema


def _research(work: Work) -> dict[str, Any]:
    a = work.args
    steps = 0

    def on_event(event: Any) -> None:
        nonlocal steps
        if work.cancel.is_set():
            raise Cancelled("the research was cancelled")
        steps += 1
        work.progress(float(steps), None, _trace_message(event))

    return work.memory.research(
        a["request"],
        max_pages=a.get("max_pages"),
        depth=a.get("depth"),
        max_tokens=a.get("max_tokens"),
        engine=a.get("engine"),
        time_budget_s=a.get("time_budget_s"),
        on_event=on_event,
    )


def _trace_message(event: Any) -> str:
    """A research trace event as one line of progress ('tool_call: bm25 "offsite"')."""
    data = getattr(event, "data", {}) or {}
    detail = data.get("query") or data.get("tool") or data.get("note") or ""
    text = f"{event.kind}: {detail}" if detail else str(event.kind)
    return text[:200]


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "research",
        "Research the memory",
        "Answer a question from memory with a cited briefing: the researcher plans searches, "
        "runs them, reads the best pages and checks what is still missing. Returns "
        "executiveSummary, keyFacts (each ending with its [page:lines] citation, with "
        "superseded values marked), openQuestions, and evidence: verbatim excerpts, each with "
        "the page, line range and commit it came from. Prefer this over search for any "
        "question; quote the evidence rather than guessing. Reports progress as it works.",
        m.ResearchArgs,
        m.ResearchResult,
        _research,
        searches=True,
    ),
    ToolSpec(
        "search",
        "Search intervals",
        "One-shot retrieval without the research loop: the best-matching intervals (a turn "
        "of a conversation, or a paragraph of a note) with their text, page, line range, "
        "commit and score. Use it to find where something is said; use research to answer.",
        m.SearchRequest,
        m.SearchResponse,
        lambda w: w.memory.search(w.args["query"], w.args.get("tool"), w.args.get("k")),
        searches=True,
    ),
    ToolSpec(
        "read_page",
        "Read a page",
        "A whole page as committed: its YAML header (title, dates, memo, tags, turns) and its "
        "text, with the commit read. Page ids come from list_pages, search hits and research "
        "evidence: '<session-id>/<n>' for a memorized session, 'notes/<file>.md' for a note. "
        "A page whose header was broken by hand is an error naming the problem; with raw, it "
        "comes as stored (header null, problem said), to repair it.",
        m.ReadPageArgs,
        m.PageResult,
        lambda w: w.memory.page(w.args["page_id"], w.args.get("at"), w.args.get("raw") or False),
    ),
    ToolSpec(
        "list_pages",
        "List pages",
        "The pages in memory, ordered by id: id, title, date, session id and the one-line "
        "memo of what the session was about (problem: why a page's header cannot be read, "
        "else null), 100 at a time; total counts them all, and next_offset (null at the end) "
        "reads on. Pass the commit it returns as 'at' when reading on, so that sessions "
        "memorized meanwhile do not shift the list. Good for an overview before reading "
        "pages; to find something, use research or search.",
        m.ListPagesArgs,
        m.ListPagesResult,
        lambda w: w.memory.list_pages(w.args.get("at"), w.args.get("limit"), w.args.get("offset")),
    ),
    ToolSpec(
        "page_history",
        "Page history",
        "The git history of one page (each version's commit, date, author, subject and whole "
        "message), or without page_id the memory's own history, newest first, 50 commits "
        "unless limit says otherwise (more: true when there are older ones; pass next_before "
        "as before to read on). Read an older version with read_page and 'at'.",
        m.PageHistoryArgs,
        m.PageHistoryResult,
        lambda w: w.memory.history(
            w.args.get("page_id"), w.args.get("limit"), w.args.get("before")
        ),
    ),
    ToolSpec(
        "memorize_session",
        "Memorize a session",
        "Store a conversation in memory, losslessly: its turns become pages (verbatim, with a "
        "header and a memo), committed to git in one commit, and searchable at once. Give each "
        "turn's speaker in metadata.speaker and its time in timestamp: research finds people "
        "and dates by them. The same session again changes nothing. Returns the session id, "
        "the pages written, the commit, and whether this session created the tenant "
        "(tenantCreated).",
        m.MemorizeSessionArgs,
        m.MemorizeSessionResult,
        lambda w: w.memory.ingest(w.args["session"]),
        read_only=False,
        idempotent=True,  # the same session again changes nothing
    ),
    ToolSpec(
        "chat",
        "Chat with the memory",
        "One turn with kbmem's own chat agent, which researches memory before it answers and "
        "cites pages. Returns the answer, its citations and chat_id: pass chat_id back to "
        "continue the same chat (an id no chat has is an error; leave it out to start a new "
        "chat). Every turn is recorded with what it read (see audit_turn) and committed to "
        "git in batches and when this server stops.",
        m.ChatArgs,
        m.ChatResult,
        lambda w: w.memory.send(w.args.get("chat_id"), w.args["message"]),
        read_only=False,
        idempotent=False,  # every call is a new turn
        searches=True,
    ),
    ToolSpec(
        "list_turns",
        "List chat turns",
        "Chat turns, committed and pending, oldest first: turn id ('<chat-id>/<n>'), "
        "question, status, time; 100 at a time (total counts them all, next_offset, null at "
        "the end, reads on).",
        m.ListTurnsArgs,
        m.ListTurnsResult,
        lambda w: w.memory.list_turns(
            w.args.get("chat_id"), w.args.get("limit"), w.args.get("offset")
        ),
    ),
    ToolSpec(
        "audit_turn",
        "Audit a chat turn",
        "What one chat turn's answer rested on: the research calls it made, the intervals it "
        "read (resolved at the commits cited), its reasoning and its answer.",
        m.AuditTurnArgs,
        m.AuditTurnResult,
        lambda w: w.memory.audit(w.args["turn_id"]),
    ),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}


# The words of a tool's argument errors, as the calling model reads them.
_ARGUMENT_ERRORS = {"missing": "is required", "extra_forbidden": "is not a parameter here"}


def check_arguments(tool: ToolSpec, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` checked against the tool's model; raises :class:`ValidationError` naming
    the first field that does not fit, as the schema names it (``session.turns[0].role``).
    Returns the arguments as given, optional fields sent as null left out (models fill every
    field they see), and numbers taken as integers made so."""
    for key, value in arguments.items():
        check_text(key, "arguments")
        check_text(value, key)
    checked = m.parse(tool.arguments, arguments, _ARGUMENT_ERRORS, whole="arguments")
    # The service gets the values as sent (a session is stored as given), minus nulls.
    dumped = checked.model_dump(exclude_unset=True)
    return {k: _as_sent(arguments[k], dumped.get(k)) for k in arguments if arguments[k] is not None}


def _as_sent(sent: Any, checked: Any) -> Any:
    # A number the schema's check took as an integer (5.0, as some clients send numbers, or
    # "5", as the Inspector CLI sends --tool-arg values) goes on as that integer.
    if (
        isinstance(sent, (float, str))
        and isinstance(checked, int)
        and not isinstance(checked, bool)
    ):
        return checked
    return sent


def tool_result(data: dict[str, Any]) -> types.CallToolResult:
    """A tool's answer: the JSON as text for any client, and as structured content."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
        is_error=False,
    )


def tool_error(message: str) -> types.CallToolResult:
    """A tool's failure as the calling model reads it: a sentence naming the problem."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


# -- the server -----------------------------------------------------------------------------------


def instructions(tenant: str | None) -> str:
    """What the client's model is told the server is."""
    whose = f" (tenant {tenant!r})" if tenant else ""
    return (
        f"kbmem: a long-term memory of past conversations and notes{whose}, kept as a git "
        "repository of markdown pages that people can read and audit. To answer a question "
        "from memory, call research: it returns a briefing whose every excerpt cites a page, "
        "a line range and a commit; quote those citations. search finds where something is "
        "said, read_page reads a page whole (also as it was at an older commit), list_pages "
        "and page_history give an overview; pages are also resources (kbmem://pages/<id>). "
        "memorize_session stores a conversation so that later research finds it. chat talks "
        "to kbmem's own cited agent; list_turns and audit_turn show what each chat answer "
        "rested on. Statements that were corrected later are marked superseded in key facts: "
        "prefer the correction."
    )


class KbmemMcp:
    """The MCP handlers over the memory ``memory_for`` picks for a request (one for stdio,
    the token's tenant for HTTP), with one :class:`Readiness` per memory."""

    def __init__(
        self,
        memory_for: MemoryFor,
        tenant: str | None = None,
        ready_wait: float = READY_WAIT,
    ):
        self.memory_for = memory_for
        self.ready_wait = ready_wait
        self._readiness: dict[int, Readiness] = {}
        self._lock = threading.Lock()
        self.server: Server[Any] = Server(
            "kbmem",
            version=kbmem_version(),
            title="kbmem memory",
            instructions=instructions(tenant),
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_resource_templates,
            on_read_resource=self.read_resource,
            on_list_prompts=self.list_prompts,
            on_get_prompt=self.get_prompt,
        )

    def readiness(self, memory: Memory) -> Readiness:
        """The preparation of ``memory``, started on first use."""
        with self._lock:
            ready = self._readiness.get(id(memory))
            if ready is None:
                ready = self._readiness[id(memory)] = Readiness(memory)
        ready.start()
        return ready

    def close(self) -> None:
        with self._lock:
            preparing = list(self._readiness.values())
        for ready in preparing:
            ready.close()

    # -- tools

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        _no_cursor(params)  # one page: a cursor can only be bogus
        return types.ListToolsResult(tools=[t.describe() for t in TOOLS])

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = TOOLS_BY_NAME.get(params.name)
        if tool is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown tool {params.name!r}; tools: {', '.join(TOOLS_BY_NAME)}",
            )
        try:
            args = check_arguments(tool, dict(params.arguments or {}))
            memory = self.memory_for(ctx)
            if tool.searches:
                status = await self.readiness(memory).wait(ctx, self.ready_wait)
                if status is not None:
                    return tool_error(
                        f"{tool.name}: kbmem is preparing this memory's index ({status}); "
                        "try again in a little while"
                    )
            return tool_result(await self._run(ctx, tool, memory, args))
        except KbmemError as exc:
            if isinstance(exc, PageFormatError) and tool.name == "read_page":
                exc.hint = "read_page with raw: true gives the page as stored, to repair it"
            return tool_error(f"{tool.name}: {exc}" + (f" ({exc.hint})" if exc.hint else ""))
        except Exception:
            log.exception("tool %s failed", tool.name)
            return tool_error(
                f"{tool.name}: internal error in kbmem; the server's log (stderr) has the details"
            )

    async def _run(
        self, ctx: ServerRequestContext[Any, Any], tool: ToolSpec, memory: Memory, args: Any
    ) -> dict[str, Any]:
        """The tool's work in a worker thread. Its progress, paced (:class:`ProgressPacer`),
        is posted to the event loop without waiting (a blocking hop would cost the worker a
        round trip through the loop), and sent, in order, by a task of this call, which has
        sent them all before the result goes out."""
        cancel = threading.Event()
        loop = asyncio.get_running_loop()
        sender, receiver = anyio.create_memory_object_stream[tuple[float, float | None, str]](
            math.inf
        )

        def post(item: tuple[float, float | None, str]) -> None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                sender.send_nowait(item)

        pacer = ProgressPacer()

        def progress(done: float, total: float | None, message: str) -> None:
            if cancel.is_set():
                raise Cancelled("the call was cancelled")
            if not pacer.due():
                return
            with contextlib.suppress(RuntimeError):  # the loop is gone: the server stopped
                loop.call_soon_threadsafe(post, (done, total, message))

        async def report() -> None:
            async with receiver:
                async for done, total, message in receiver:
                    try:
                        await ctx.session.report_progress(done, total, message)
                    except Exception:  # the client left; the work's own end will tell
                        log.debug("progress not sent", exc_info=True)

        work = Work(memory, args, cancel, progress)
        async with anyio.create_task_group() as reporting:
            reporting.start_soon(report)
            try:
                # Abandoned on cancel, so that the cancellation is seen now: the worker sees
                # the flag at its next step and stops (research writes nothing; memorizing is
                # one commit, finished or not begun).
                result = await anyio.to_thread.run_sync(tool.run, work, abandon_on_cancel=True)
            except anyio.get_cancelled_exc_class():
                cancel.set()
                raise
            finally:
                # After the worker's posts: each was queued on the loop before the worker's
                # end was, and the loop runs them in turn.
                sender.close()
        return result

    # -- resources

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        memory = self.memory_for(ctx)
        offset, at = _cursor(params)
        listed = await anyio.to_thread.run_sync(
            lambda: memory.list_pages(at, RESOURCE_PAGE, offset)
        )
        resources = []
        if offset == 0:
            resources.append(
                types.Resource(
                    uri="kbmem://MEMORY.md",
                    name="MEMORY.md",
                    title="The memory's index",
                    description="One line per memorized session: its date, id and memo.",
                    mime_type="text/markdown",
                )
            )
        if offset == 0 and await anyio.to_thread.run_sync(lambda: sync_active(memory.kb)):
            resources.append(STATUS_RESOURCE)
        for page in listed["pages"]:
            resources.append(
                types.Resource(
                    uri=page_uri(page["id"]),
                    name=page["id"],
                    title=page["title"] or None,
                    description=page["memo"] or page["problem"] or None,
                    mime_type="text/markdown",
                )
            )
        next_offset = listed["next_offset"]
        return types.ListResourcesResult(
            resources=resources,
            next_cursor=None if next_offset is None else f"{next_offset}@{listed['commit']}",
        )

    async def list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        _no_cursor(params)
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template="kbmem://pages/{+page_id}",
                    name="page",
                    title="A page of the memory",
                    description="A page as committed now: '<session-id>/<n>' or 'notes/<file>.md'.",
                    mime_type="text/markdown",
                ),
                types.ResourceTemplate(
                    uri_template="kbmem://pages/{+page_id}{?at}",
                    name="page-revision",
                    title="A page as it was",
                    description="A page as it was at a commit (at: a commit id or HEAD~N).",
                    mime_type="text/markdown",
                ),
                types.ResourceTemplate(
                    uri_template="kbmem://MEMORY.md{?at}",
                    name="memory-index",
                    title="The memory's index as it was",
                    description="MEMORY.md as it was at a commit.",
                    mime_type="text/markdown",
                ),
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        memory = self.memory_for(ctx)
        uri = str(params.uri)
        kind, page_id, at = parse_uri(uri)
        if kind == "status":
            status = await anyio.to_thread.run_sync(lambda: health(memory.kb))
            return types.ReadResourceResult(
                contents=[
                    types.TextResourceContents(
                        uri=uri, mime_type="application/json", text=json.dumps(status, indent=1)
                    )
                ]
            )
        try:
            if kind == "memory":
                text = await anyio.to_thread.run_sync(lambda: read_memory_index(memory, at))
            else:
                page = await anyio.to_thread.run_sync(lambda: memory.page(page_id, at, True))
                text = page["text"]
        except NotFound as exc:
            raise MCPError(RESOURCE_NOT_FOUND, f"resource not found: {uri} ({exc})") from None
        except KbmemError as exc:
            raise MCPError(types.INVALID_PARAMS, f"{uri}: {exc}") from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)]
        )

    # -- prompts

    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        _no_cursor(params)
        return types.ListPromptsResult(prompts=[p for p, _ in PROMPTS.values()])

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        entry = PROMPTS.get(params.name)
        if entry is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown prompt {params.name!r}; prompts: {', '.join(PROMPTS)}",
            )
        prompt, render = entry
        arguments = dict(params.arguments or {})
        for argument in prompt.arguments or []:
            if argument.required and not str(arguments.get(argument.name, "")).strip():
                raise MCPError(types.INVALID_PARAMS, f"argument {argument.name!r} is required")
        return render(arguments)


def _no_cursor(params: types.PaginatedRequestParams | None) -> None:
    if params is not None and params.cursor is not None:
        raise MCPError(types.INVALID_PARAMS, f"invalid cursor {params.cursor!r}")


def _cursor(params: types.PaginatedRequestParams | None) -> tuple[int, str | None]:
    """A resources/list cursor as (offset, commit): the commit pins the list, so that pages
    memorized meanwhile do not shift it."""
    cursor = params.cursor if params is not None else None
    if cursor is None:
        return 0, None
    offset, _, commit = cursor.partition("@")
    if not offset.isdigit() or len(commit) != 40:
        raise MCPError(types.INVALID_PARAMS, f"invalid cursor {cursor!r}")
    return int(offset), commit


def page_uri(page_id: str) -> str:
    return "kbmem://pages/" + quote(page_id, safe="/._-~")


def parse_uri(uri: str) -> tuple[str, str, str | None]:
    """``(kind, page id, at)`` of a kbmem resource URI: kind ``page``, ``memory`` or
    ``status``."""
    parts = urlsplit(uri)
    query = parse_qs(parts.query)
    at = query.get("at", [None])[0]
    if parts.scheme == "kbmem" and parts.netloc == "status" and parts.path in ("", "/"):
        return "status", "", None
    if parts.scheme == "kbmem" and parts.netloc == "MEMORY.md" and parts.path in ("", "/"):
        return "memory", "", at
    if parts.scheme == "kbmem" and parts.netloc == "pages" and len(parts.path) > 1:
        return "page", unquote(parts.path[1:]), at
    raise MCPError(
        RESOURCE_NOT_FOUND,
        f"resource not found: {uri} (kbmem's resources are kbmem://pages/<page-id> and "
        "kbmem://MEMORY.md, each with ?at=<commit> for an older version)",
    )


def read_memory_index(memory: Memory, at: str | None) -> str:
    """The tenant's MEMORY.md as committed at ``at`` (HEAD when None)."""
    rev = at or "HEAD"
    if not memory.kb.head():
        raise NotFound("the memory has no commits yet")
    commit = memory.kb.resolve(rev)
    return memory.kb.read_bytes(tenant_prefix(memory.tenant) + "MEMORY.md", commit).decode(
        "utf-8", "replace"
    )


def _research_first(arguments: dict[str, str]) -> types.GetPromptResult:
    question = arguments["question"].strip()
    text = (
        "Answer the question below from kbmem's memory. First call the research tool with "
        "the question in plain words. Base the answer on the briefing's keyFacts and "
        "evidence only; after each statement, cite where it comes from as the briefing does "
        "([page-id:start-end]). Where a fact is marked superseded, give the correction. If "
        "the memory does not say, answer that it does not, and list the briefing's "
        "openQuestions; do not guess.\n\nQuestion: " + question
    )
    return types.GetPromptResult(
        description="Research the memory before answering, and cite the intervals.",
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
        ],
    )


def _remember(arguments: dict[str, str]) -> types.GetPromptResult:
    title = arguments.get("title", "").strip()
    text = (
        "Store this conversation in kbmem's memory with the memorize_session tool: every "
        "turn verbatim, in order, with its speaker's name in metadata.speaker and its time "
        "(ISO 8601) in timestamp, so that later research finds people and dates"
        + (f", titled {title!r}" if title else "")
        + ". Then say which pages were written."
    )
    return types.GetPromptResult(
        description="Memorize the conversation so far.",
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
        ],
    )


PROMPTS: dict[str, tuple[types.Prompt, Callable[[dict[str, str]], types.GetPromptResult]]] = {
    "answer_from_memory": (
        types.Prompt(
            name="answer_from_memory",
            title="Answer from memory, with citations",
            description="Research the memory before answering and cite the intervals.",
            arguments=[
                types.PromptArgument(
                    name="question", description="The question to answer.", required=True
                )
            ],
        ),
        _research_first,
    ),
    "memorize_conversation": (
        types.Prompt(
            name="memorize_conversation",
            title="Memorize this conversation",
            description="Store the conversation so far in memory, losslessly.",
            arguments=[
                types.PromptArgument(
                    name="title", description="What it was, in a few words.", required=False
                )
            ],
        ),
        _remember,
    ),
}
