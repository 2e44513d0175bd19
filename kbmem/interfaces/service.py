"""One tenant's memory as operations with JSON-ready results: what the HTTP API and the MCP
server offer other agents, and what the CLI prints with ``--json``.

Every operation is scoped to the tenant a :class:`Memory` was opened for; a page, chat or turn
id is validated before it names anything on disk, and a session that says it belongs to
another tenant is refused. Errors are the :mod:`kbmem.errors` hierarchy, which each front end
renders in its own form (an exit code, an HTTP status with a JSON body, a JSON-RPC error).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from kbmem.config import MAX_REQUEST_CHARS
from kbmem.errors import (
    KbmemError,
    NotFound,
    PageFormatError,
    TooMany,
    ValidationError,
)
from kbmem.ids import check_tenant
from kbmem.store.pagestore import PageStore, StoredPage, tenant_prefix
from kbmem.store.repository import CommitInfo, KnowledgeBase

log = logging.getLogger(__name__)

SEARCH_TOOLS = ("hybrid", "bm25", "dense")
# What a session in the Summit shape may hold (sessions.session_from_mapping reads these).
SESSION_FIELDS = frozenset(
    {
        "tenantId",
        "sessionId",
        "agentId",
        "title",
        "classification",
        "policyTags",
        "tags",
        "metadata",
        "originRunId",
        "requestIntent",
        "turns",
    }
)
# What one turn of such a session may hold: a misspelt "timestmap" is an error, not a
# timestamp silently lost.
TURN_FIELDS = ("role", "content", "timestamp", "metadata")
ENGINES = ("offline", "llm")
CHAT_IDLE_SECONDS = 300.0
MAX_OPEN_CHATS = 64
# Lists come a window at a time: a whole knowledge base's pages or turns would fill a calling
# model's context (300 pages are 120 kB of JSON), and an HTTP client's memory in the end.
WINDOW = 100
HISTORY_WINDOW = 50  # commits
MAX_WINDOW = 1000
MAX_OFFSET = 10_000_000


@functools.cache
def kbmem_version() -> str:
    """The installed package's version (read once: the HTTP server names it in every
    response, and a metadata lookup costs 0.3 ms)."""
    try:
        return version("kbmem")
    except PackageNotFoundError:
        return "unknown"


def ingest_result_dict(result: Any) -> dict[str, Any]:
    return {
        "tenantId": result.tenant_id,
        "sessionId": result.session_id,
        "status": result.status,
        "pages": result.page_ids,
        "commit": result.commit,
        "memo": result.memo,
        "memoNote": result.memo_note,
        "tenantCreated": result.tenant_created,
    }


def turn_summary_dict(summary: Any) -> dict[str, Any]:
    from kbmem.agent.provenance import iso

    return {
        "turn": summary.turn_id,
        "chat_id": summary.chat_id,
        "n": summary.turn,
        "question": summary.question,
        "status": summary.status,
        "started_at": iso(summary.started_at),
        "committed": summary.committed,
        "problem": summary.problem,
    }


def turn_reply_dict(record: Any) -> dict[str, Any]:
    """A finished chat turn as a caller needs it: the answer and what it cites."""
    return {
        "chat_id": record.chat_id,
        "turn": record.turn,
        "turn_id": record.turn_id,
        "status": record.status,
        "answer": record.answer,
        "citations": [c.citation() for c in record.context if c.cited],
        "error": record.error,
    }


def hit_dict(hit: Any) -> dict[str, Any]:
    """A search hit in camelCase, as a briefing's evidence is: its interval as evidence
    carries one (``turnIds``; the page id is the hit's own ``pageId``), and its kind. Its
    ``score`` is the retriever's own (BM25, cosine similarity, or reciprocal-rank fusion for
    hybrid), not a briefing's ``relevanceScore``, which fuses every search of a research."""
    interval = hit.interval
    return {
        **hit.to_dict(),
        "interval": {
            "path": interval.path,
            "start": interval.start,
            "end": interval.end,
            "commit": interval.commit,
            "blob": interval.blob,
            "kind": interval.kind,
            "turnIds": list(interval.turn_ids),
        },
    }


def commit_dict(commit: CommitInfo) -> dict[str, Any]:
    """A commit as every front end lists it: its full id, date, author, subject, the whole
    message (body and trailers, as ``git log`` prints it) and the page's path then."""
    return {
        "commit": commit.sha,
        "date": commit.date,
        "author": commit.author,
        "subject": commit.message.splitlines()[0] if commit.message else "",
        "message": commit.message,
        "path": commit.path,
    }


def _text_arg(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("must be non-empty text", field)
    check_text(value, field)
    return value


def _request_text(value: Any, field: str) -> str:
    """Text of a request or a search query, at most ``MAX_REQUEST_CHARS`` long (a query of
    100,000 words kept BM25 busy for 106 s)."""
    text = _text_arg(value, field)
    if len(text) > MAX_REQUEST_CHARS:
        raise ValidationError(f"longer than {MAX_REQUEST_CHARS} characters", field)
    return text


def whole_number(value: Any) -> Any:
    """A JSON number that is whole as an ``int``, however it was written: ``5.0`` is 5, as
    JSON Schema's "integer" has it (some clients write every number with a point). Anything
    else (``5.5``, ``"5"``, ``true``) is returned as it was, for the caller to refuse."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _int_arg(value: Any, field: str, low: int, high: int) -> int | None:
    if value is None:
        return None
    value = whole_number(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError("must be a whole number", field)
    if not low <= value <= high:
        raise ValidationError(f"must be between {low} and {high}", field)
    return value


def window_args(limit: Any, offset: Any) -> tuple[int, int]:
    """A list's ``limit`` (default ``WINDOW``, at most ``MAX_WINDOW``) and ``offset``
    (default 0), checked alike for every front end."""
    return (
        _int_arg(limit, "limit", 1, MAX_WINDOW) or WINDOW,
        _int_arg(offset, "offset", 0, MAX_OFFSET) or 0,
    )


def window(items: list[Any], key: str, limit: int, offset: int) -> dict[str, Any]:
    """``items[offset:offset + limit]`` as ``{key, total, next_offset}``; ``next_offset`` is
    null when nothing is left."""
    shown = items[offset : offset + limit]
    end = offset + len(shown)
    return {key: shown, "total": len(items), "next_offset": end if end < len(items) else None}


# A commit id, HEAD, or either with ~N / ^N steps back. Git's other revision forms search or
# read the whole repository (":/<regex>" matches every tenant's commit messages,
# "HEAD:<path>" names any file), so a caller scoped to one tenant gets none of them.
_REVISION = re.compile(r"(?:HEAD|[0-9a-f]{4,40})(?:[~^][0-9]{0,6}){0,20}")
_COMMIT_ID = re.compile(r"[0-9a-f]{4,40}")


def _rev_arg(value: Any) -> str:
    if value is None:
        return "HEAD"
    if not isinstance(value, str) or not _REVISION.fullmatch(value):
        raise ValidationError(
            "must be a commit id or HEAD, optionally with ~N or ^N (e.g. HEAD~2)", "at"
        )
    return value


@contextlib.contextmanager
def field_named(field: str, *names: str) -> Iterator[None]:
    """A validation error of the core whose field is one of ``names`` (its own names for an
    id: ``pageId``, ``TURN``) re-named ``field``, the name the caller gave the value, so that
    a client, or the model behind it, knows which of its arguments to fix."""
    try:
        yield
    except ValidationError as exc:
        if exc.field in names and not isinstance(exc, PageFormatError):
            exc.field = field
            exc.args = (f"{field}: {exc.problem}",)
        raise


def check_text(value: Any, field: str) -> None:
    """Refuse text that cannot be stored: JSON's escapes can carry half a UTF-16 pair
    ("\\ud800"), which no file or git commit can hold. Walks nested lists and objects."""
    stack = [(value, field)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise ValidationError("holds an unpaired UTF-16 surrogate (\\ud800-\\udfff)", where)
        elif isinstance(item, dict):
            stack.extend((v, f"{where}.{k}") for k, v in item.items())
            stack.extend((k, where) for k in item)
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(item))


_SURROGATE = re.compile("[\ud800-\udfff]")


class Memory:
    """One tenant's memory in one knowledge base. Safe to use from several threads: searches
    share one toolkit, each research request gets its own researcher, and each chat is a
    :class:`~kbmem.agent.session.ChatSession` kept open until :meth:`close_chat` or
    :meth:`close` (which commits its pending turns)."""

    def __init__(self, kb: KnowledgeBase, tenant: str, model: str | None = None):
        self.kb = kb
        self.tenant = check_tenant(tenant)
        self.model = model if model is not None else kb.settings.model
        self.store = PageStore(kb, self.tenant)
        self._toolkit: Any = None
        self._lock = threading.Lock()
        self._chats_lock = threading.Lock()
        self._chats: dict[str, _OpenChat] = {}

    # -- pages ----------------------------------------------------------------------------

    def list_pages(self, at: Any = None, limit: Any = None, offset: Any = None) -> dict[str, Any]:
        """A window of the tenant's pages, ordered by page id, as ``{pages, total,
        next_offset, commit}``: ``commit`` is the one read (null before the first), which a
        caller paging on passes as ``at`` to read the next windows from the same pages. The
        pages are counted from the commit's tree and only the window's are read; one whose
        header cannot be read is listed with the ``problem``, as a damaged turn is."""
        rev = _rev_arg(at)
        limit, offset = window_args(limit, offset)
        commit = self.kb.resolve(rev) if self.kb.head() else None
        files = sorted(self.store.files(commit).items()) if commit else []
        listed = window(files, "pages", limit, offset)
        listed["pages"] = [
            self._page_entry(page_id, *where, commit) for page_id, where in listed["pages"]
        ]
        return {**listed, "commit": commit}

    def _page_entry(self, page_id: str, path: str, blob: str, commit: str) -> dict[str, Any]:
        """One page of a list: its id, title, date, session and memo, or the problem that
        keeps its header from being read."""
        try:
            meta = self.store.record(page_id, path, blob, commit).page.meta
        except PageFormatError as exc:
            meta, problem = {}, exc.problem
        else:
            problem = None
        return {
            "id": page_id,
            "title": str(meta.get("title") or ""),
            "created_at": str(meta.get("created_at") or ""),
            "session_id": meta.get("session_id"),
            "memo": str(meta.get("memo") or ""),
            "problem": problem,
        }

    def page(self, page_id: Any, at: Any = None, raw: Any = False) -> dict[str, Any]:
        """A page as ``{id, path, commit, header, text, problem}``; ``text`` is the file as
        stored. A page whose header was broken by hand is a PageFormatError (422 over HTTP)
        naming the problem, unless ``raw``: then it comes as stored, its ``header`` null and
        its ``problem`` said (null for a page that reads), for a client that must see it to
        repair it, as ``kbmem show`` prints it."""
        if not isinstance(raw, bool):
            raise ValidationError("must be true or false", "raw")
        page_id = _text_arg(page_id, "page_id")
        with field_named("page_id", "pageId"):
            stored = self.store.read_stored(page_id, _rev_arg(at))
            if stored.error is not None and not raw:
                raise stored.error
        if stored.record is None:  # its header broken, and asked for as stored
            return _page_dict(page_id, stored, None, stored.error and stored.error.problem)
        return _page_dict(page_id, stored, _plain(stored.record.page.meta), None)

    def history(self, page_id: Any = None, limit: Any = None, before: Any = None) -> dict[str, Any]:
        """The newest ``limit`` commits (default ``HISTORY_WINDOW``, at most ``MAX_WINDOW``)
        of one page, or of the whole tenant without ``page_id``, older than the commit
        ``before`` when given, as ``{page_id, commits, more, next_before}``: ``more`` says
        whether older ones were left out, and ``next_before`` (null at the end) is the
        ``before`` that reads on. A cursor, not an offset: commits made meanwhile come at
        the top of a newest-first list, and would shift an offset's windows."""
        n = _int_arg(limit, "limit", 1, MAX_WINDOW) or HISTORY_WINDOW
        prefix = tenant_prefix(self.tenant)
        cursor = None
        if before is not None:
            if not isinstance(before, str) or not _COMMIT_ID.fullmatch(before):
                raise ValidationError("must be a commit id from this history", "before")
            with field_named("before", "rev"):
                cursor = self.kb.resolve(before)
        if page_id is None:
            # The tenant's own history only: commit subjects name sessions and notes. One
            # commit more than asked tells whether there are more.
            if cursor is not None:
                # From the cursor on: the cursor itself first, if it is one of the tenant's.
                older = self.kb.log(prefix, max_count=n + 2, follow=False, start=cursor)
                if not older or older[0].sha != cursor:
                    raise ValidationError("is not a commit of this history", "before")
                commits = older[1:]
            else:
                commits = self.kb.log(prefix, max_count=n + 1, follow=False)
        else:
            # As for the tenant's: one commit more than asked, read from the cursor on.
            with field_named("page_id", "pageId"):
                commits = self.store.history(_text_arg(page_id, "page_id"), n + 1, cursor)
        shown = commits[:n]
        more = len(commits) > n
        return {
            "page_id": page_id,
            "commits": [commit_dict(c) for c in shown],
            "more": more,
            "next_before": shown[-1].sha if more and shown else None,
        }

    # -- retrieval and research -------------------------------------------------------------

    @property
    def toolkit(self) -> Any:
        with self._lock:
            if self._toolkit is None:
                from kbmem.research.toolkit import Toolkit

                self._toolkit = Toolkit(self.kb, self.tenant)
            return self._toolkit

    def search(self, query: Any, tool: Any = "hybrid", k: Any = 10) -> dict[str, Any]:
        query = _request_text(query, "query")
        tool = "hybrid" if tool is None else tool
        if tool not in SEARCH_TOOLS:
            raise ValidationError(f"must be one of {', '.join(SEARCH_TOOLS)}", "tool")
        k = _int_arg(10 if k is None else k, "k", 1, 100)
        hits = self.toolkit.search(query, tool, k)
        return {"query": query, "tool": tool, "hits": [hit_dict(h) for h in hits]}

    def research_call(
        self,
        request: Any,
        *,
        max_pages: Any = None,
        depth: Any = None,
        max_tokens: Any = None,
        engine: Any = None,
    ) -> Callable[[Callable[[Any], None] | None], Any]:
        """Check a research request whole and return the call that runs it (given a trace
        sink, it returns the ``BriefingContext``): a caller that streams the trace can refuse
        bad arguments before its stream begins. ``engine`` is ``offline`` or ``llm``; the LLM
        is the one this memory was opened with, never one the caller names."""
        from kbmem.research.researcher import Researcher

        request = _request_text(request, "request")
        limits = {
            "max_pages": _int_arg(max_pages, "max_pages", 1, 32),
            "max_depth": _int_arg(depth, "depth", 0, 5),
            "max_tokens": _int_arg(max_tokens, "max_tokens", 50, 20_000),
        }
        if engine is None:
            engine = self.kb.settings.section("research")["engine"]
        if engine not in ENGINES:
            raise ValidationError(f"must be one of {', '.join(ENGINES)}", "engine")
        if engine == "llm" and not self.model:
            raise ValidationError("no model is configured for the llm engine", "engine")

        def run(on_event: Callable[[Any], None] | None) -> Any:
            researcher = Researcher(self.kb, self.tenant, toolkit=self.toolkit)
            try:
                if engine == "llm":
                    from kbmem.research.llm_engine import make_llm_engine

                    researcher.engine = make_llm_engine(self.kb.settings, self.model)(researcher)
                return researcher.research(request, on_event=on_event, **limits)
            finally:
                researcher.close()

        return run

    def research(
        self,
        request: Any,
        *,
        trace: bool = False,
        on_event: Callable[[Any], None] | None = None,
        **limits: Any,
    ) -> dict[str, Any]:
        """A cited briefing for ``request`` (the ``BriefingContext`` JSON), with the trace of
        every step when ``trace`` is true; ``limits`` as for :meth:`research_call`."""
        briefing = self.research_call(request, **limits)(on_event)
        return briefing.to_dict(with_trace=trace)

    # -- memorizing ---------------------------------------------------------------------------

    def ingest(self, session: Any) -> dict[str, Any]:
        """Memorize one session given in the Summit shape (``tenantId`` may be left out; if
        given it must be this memory's tenant)."""
        from kbmem.memorize.memo import memo_engine
        from kbmem.memorize.memorizer import check_session_size, ingest_session
        from kbmem.memorize.sessions import session_from_mapping

        _check_turn_fields(session)
        parsed = session_from_mapping(session, self.tenant)
        check_session_size(self.kb, parsed)
        result = ingest_session(self.kb, parsed, memo_engine(self.kb.settings, self.model))
        return ingest_result_dict(result)

    # -- chats --------------------------------------------------------------------------------

    def open_chat(self, chat_id: Any = None) -> tuple[str, bool]:
        """Open a chat: a new one, under a new id, without ``chat_id``; else the tenant's
        chat of that id (NotFound when it has none). Returns its id, and whether it was
        opened now (False: it was open already). A chat open in another process is refused
        (InUse) by the chat's journal lock; at most ``MAX_OPEN_CHATS`` are open at once,
        since each holds its journal open until it is closed or idle. A new chat is recorded
        before its id is given out, so that it stays known, with no turns, if it is closed
        before its first turn (see :func:`~kbmem.agent.journal.record_chat`)."""
        from kbmem.agent.journal import record_chat
        from kbmem.agent.session import ChatSession, new_chat_id

        if chat_id is not None:
            chat_id = self._existing_chat(chat_id)
        with self._chats_lock:
            if chat_id in self._chats:
                self._chats[chat_id].used = time.monotonic()
                return chat_id, False
            if len(self._chats) >= MAX_OPEN_CHATS:
                raise TooMany(
                    f"{MAX_OPEN_CHATS} chats are open for this tenant; close one first "
                    "(they also close after a while unused)"
                )
            if chat_id is None:
                chat_id = new_chat_id()
                record_chat(self.kb, self.tenant, chat_id)
            chat = _OpenChat(ChatSession(self.kb, self.tenant, self.model, chat_id))
            self._chats[chat_id] = chat
            return chat_id, True

    def _existing_chat(self, chat_id: Any) -> str:
        """``chat_id``, checked, if the tenant has that chat (see :meth:`_known_chat`). A
        client names a chat only to continue it: an id it made up, or misspelt, would
        otherwise start a new chat silently, and one another client made up too would be
        shared."""
        from kbmem.agent.session import check_chat_id

        chat_id = check_chat_id(chat_id)
        if not self._known_chat(chat_id):
            raise NotFound(
                f"tenant {self.tenant!r} has no chat {chat_id!r}; start a new chat without "
                "an id, and use the id it is given"
            )
        return chat_id

    def _known_chat(self, chat_id: str) -> bool:
        """Whether the tenant has the chat ``chat_id`` (a checked id): open here, or as
        :func:`~kbmem.agent.provenance.known_chat` knows it (turns committed, a journal, or
        started by a client and closed before its first turn)."""
        from kbmem.agent.provenance import known_chat

        with self._chats_lock:
            if chat_id in self._chats:
                return True
        return known_chat(self.kb, self.tenant, chat_id)

    def _forget_chat_record(self, chat_id: str) -> None:
        """Drop a chat's record once git has its turns, which keep it known from then on."""
        from kbmem.agent.journal import forget_chat_record
        from kbmem.agent.provenance import chat_dir

        if self.kb.has_path(chat_dir(self.tenant, chat_id)):
            forget_chat_record(self.kb, self.tenant, chat_id)

    def send(self, chat_id: Any, message: Any) -> dict[str, Any]:
        """One turn of the chat ``chat_id`` (opened first if need be; NotFound when the
        tenant has no such chat), or of a new chat without ``chat_id``. Turns of one chat
        run one after another; a second message waits for the first answer."""
        message = _text_arg(message, "message")
        chat_id, _ = self.open_chat(chat_id)
        with self._chats_lock:
            chat = self._chats.get(chat_id)
        if chat is None:
            raise NotFound(f"chat {chat_id!r} was closed")
        with chat.turn:
            if chat.session.closed:
                raise NotFound(f"chat {chat_id!r} was closed")
            chat.used = time.monotonic()
            record = chat.session.send(message)
            chat.used = time.monotonic()
        return turn_reply_dict(record)

    def close_chat(self, chat_id: Any, *, wait: bool = True) -> dict[str, Any]:
        """Commit the chat's pending turns and release it (after its running turn, if any;
        with ``wait=False``, a chat in the middle of a turn is left open: None is returned)."""
        from kbmem.agent.session import check_chat_id

        chat_id = check_chat_id(chat_id)
        with self._chats_lock:
            chat = self._chats.get(chat_id)
        if chat is None:
            raise self._not_open(chat_id)
        if not chat.turn.acquire(blocking=wait):
            return {"chat_id": chat_id, "commit": None, "closed": False}
        try:
            if chat.session.closed:
                raise self._not_open(chat_id)
            # Closed first, forgotten after: a commit that fails (the knowledge base stayed
            # locked) leaves the chat open and its turns pending, to be closed again later.
            commit = chat.session.close()
            with self._chats_lock:
                if self._chats.get(chat_id) is chat:
                    del self._chats[chat_id]
            self._forget_chat_record(chat_id)
            return {"chat_id": chat_id, "commit": commit, "closed": True}
        finally:
            chat.turn.release()

    def _not_open(self, chat_id: str) -> NotFound:
        """Closing a chat that is not open here: one the tenant has is closed (or open in
        another process), one it does not have is named as :meth:`list_turns` names it."""
        if self._known_chat(chat_id):
            return NotFound(f"chat {chat_id!r} is not open")
        return NotFound(f"tenant {self.tenant!r} has no chat {chat_id!r}")

    def close_idle_chats(self, idle_seconds: float) -> list[str]:
        """Close (and commit) the chats nobody has used for ``idle_seconds``; a chat in the
        middle of a turn is not idle."""
        now = time.monotonic()
        with self._chats_lock:
            idle = [c for c, chat in self._chats.items() if now - chat.used >= idle_seconds]
        closed = []
        for chat_id in idle:
            try:
                if self.close_chat(chat_id, wait=False)["closed"]:
                    closed.append(chat_id)
            except NotFound:
                continue  # closed by another thread in the meantime
        return closed

    def list_turns(
        self, chat_id: Any = None, limit: Any = None, offset: Any = None
    ) -> dict[str, Any]:
        """A window of the tenant's chat turns (or one chat's), committed and pending, as
        ``{turns, total, next_offset}``, as :func:`~kbmem.agent.provenance.list_turns` lists
        them: each chat's in turn order, the chats merged by when each turn started (then
        chat id and turn number), and only the window's turns read. NotFound for a chat the
        tenant does not have; a chat closed before its first turn has none."""
        from kbmem.agent.provenance import list_turns
        from kbmem.agent.session import check_chat_id

        limit, offset = window_args(limit, offset)
        if chat_id is not None:
            chat_id = check_chat_id(chat_id)
        listed = list_turns(self.kb, self.tenant, chat_id, limit, offset)
        return {
            "turns": [turn_summary_dict(t) for t in listed.turns],
            "total": listed.total,
            "next_offset": listed.next_offset,
        }

    def audit(self, turn_id: Any) -> dict[str, Any]:
        from kbmem.agent.provenance import audit_turn, parse_turn_id

        with field_named("turn_id", "TURN", "turn", "chat_id"):
            chat_id, turn = parse_turn_id(_text_arg(turn_id, "turn_id"))
        return audit_turn(self.kb, self.tenant, chat_id, turn).to_dict()

    def close(self) -> None:
        """Commit every open chat's pending turns and release their journals. A chat that
        fails to commit (its turns stay in its journal for the next chat session to recover)
        does not keep the others open: the first failure is raised after all were tried."""
        with self._chats_lock:
            chat_ids = list(self._chats)
        failure: KbmemError | None = None
        for chat_id in chat_ids:
            try:
                self.close_chat(chat_id)
            except NotFound:
                continue
            except KbmemError as exc:
                failure = failure or exc
        if failure is not None:
            raise failure


def _check_turn_fields(session: Any) -> None:
    """Refuse a turn field the Summit shape does not have (``kbmem ingest`` reads files that
    other tools wrote, and leaves such fields be; a client of the API is told)."""
    turns = session.get("turns") if isinstance(session, dict) else None
    for n, turn in enumerate(turns if isinstance(turns, list) else []):
        for key in turn if isinstance(turn, dict) else ():
            if key not in TURN_FIELDS:
                raise ValidationError(
                    f"is not a field of a turn (expected: {', '.join(TURN_FIELDS)})",
                    f"turns[{n}].{key}",
                )


def recover_chats(kb: KnowledgeBase) -> list[str]:
    """Commit the turns that chats of an earlier run left in the journal (a server killed
    before it could commit them): a server calls this when it starts, rather than leaving
    them until some client opens a chat. Returns the commits made; a failure (the knowledge
    base stayed locked) is logged and left for the next chance."""
    from kbmem.agent.batch import BatchCommitter, turn_span
    from kbmem.agent.events import BatchCommitted
    from kbmem.agent.journal import recover_journals

    def note(event: Any) -> None:
        if isinstance(event, BatchCommitted):
            log.info(
                "committed chat %s %s that an earlier run left (%s)",
                event.chat_id,
                turn_span(event.first, event.last),
                event.commit[:10],
            )
        else:
            log.warning("%s", getattr(event, "message", event))

    try:
        return recover_journals(kb, BatchCommitter(kb), note)
    except KbmemError as exc:
        log.warning("journaled chat turns not committed yet: %s", exc)
        return []


def close_idle_chats_until(
    stop: threading.Event,
    memories: Callable[[], Iterable[Memory]],
    idle_seconds: float = CHAT_IDLE_SECONDS,
) -> None:
    """Until ``stop`` is set, close (and commit) the chats of ``memories()`` that nobody has
    used for ``idle_seconds``: a chat's turns are committed in batches, and a client that
    stops talking would otherwise leave its last turns waiting in the journal. Meant to run
    in a daemon thread beside a server."""
    while not stop.wait(min(60.0, idle_seconds / 2)):
        for memory in list(memories()):
            try:
                memory.close_idle_chats(idle_seconds)
            except Exception:  # one chat's failure must not stop the closing of the others
                log.exception("closing idle chats of tenant %s", memory.tenant)


class _OpenChat:
    """A chat this memory holds open: its session, the lock its turns run under, and when
    it was last used."""

    def __init__(self, session: Any):
        self.session = session
        self.turn = threading.Lock()
        self.used = time.monotonic()


def _page_dict(
    page_id: str, stored: StoredPage, header: Any, problem: str | None
) -> dict[str, Any]:
    return {
        "id": page_id,
        "path": stored.path,
        "commit": stored.commit,
        "header": header,
        "text": stored.text,
        "problem": problem,
    }


def _plain(value: Any) -> Any:
    """A page header as JSON-ready values (YAML dates become ISO text)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)
