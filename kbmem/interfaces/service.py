"""One tenant's memory as operations with JSON-ready results: what the HTTP API and the MCP
server offer other agents, and what the CLI prints with ``--json``.

Every operation is scoped to the tenant a :class:`Memory` was opened for; a page, chat or turn
id is validated before it names anything on disk, and a session that says it belongs to
another tenant is refused. Errors are the :mod:`kbmem.errors` hierarchy, which each front end
renders in its own form (an exit code, an HTTP status with a JSON body, a JSON-RPC error).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kbmem.config import HARD_CAPS
from kbmem.errors import NotFound, PageFormatError, ValidationError
from kbmem.ids import check_tenant
from kbmem.interfaces.args import (
    COMMIT_ID,
    HISTORY_WINDOW,
    MAX_OFFSET,
    MAX_WINDOW,
    WINDOW,
    check_text,
    field_named,
    int_arg,
    request_text,
    rev_arg,
    text_arg,
    whole_number,
    window,
    window_args,
)
from kbmem.interfaces.chats import (
    CHAT_IDLE_SECONDS,
    MAX_OPEN_CHATS,
    Chats,
    OpenChat,
    close_idle_chats_until,
    recover_chats,
)
from kbmem.interfaces.shapes import (
    commit_dict,
    hit_dict,
    ingest_result_dict,
    kbmem_version,
    page_dict,
    plain,
    turn_reply_dict,
    turn_summary_dict,
)
from kbmem.store.pagestore import PageStore, tenant_prefix
from kbmem.store.repository import KnowledgeBase

# The service's parts, importable from here as before the split.
__all__ = [
    "CHAT_IDLE_SECONDS",
    "ENGINES",
    "HISTORY_WINDOW",
    "MAX_OFFSET",
    "MAX_OPEN_CHATS",
    "MAX_WINDOW",
    "SEARCH_TOOLS",
    "WINDOW",
    "Memory",
    "check_text",
    "close_idle_chats_until",
    "commit_dict",
    "field_named",
    "health",
    "hit_dict",
    "ingest_result_dict",
    "kbmem_version",
    "recover_chats",
    "turn_reply_dict",
    "turn_summary_dict",
    "whole_number",
    "window",
    "window_args",
]

log = logging.getLogger(__name__)

SEARCH_TOOLS = ("hybrid", "bm25", "dense")
ENGINES = ("offline", "llm")


class Memory(Chats):
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
        self._chats: dict[str, OpenChat] = {}

    # -- pages ----------------------------------------------------------------------------

    def list_pages(self, at: Any = None, limit: Any = None, offset: Any = None) -> dict[str, Any]:
        """A window of the tenant's pages, ordered by page id, as ``{pages, total,
        next_offset, commit}``: ``commit`` is the one read (null before the first), which a
        caller paging on passes as ``at`` to read the next windows from the same pages. The
        pages are counted from the commit's tree and only the window's are read; one whose
        header cannot be read is listed with the ``problem``, as a damaged turn is."""
        rev = rev_arg(at)
        limit, offset = window_args(limit, offset)
        commit = self._tenant_commit(rev)
        files = sorted(self.store.files(commit).items()) if commit else []
        listed = window(files, "pages", limit, offset)
        listed["pages"] = (
            [
                self._page_entry(page_id, path, blob, commit)
                for page_id, (path, blob) in listed["pages"]
            ]
            if commit
            else []
        )
        return {**listed, "commit": commit}

    def _tenant_commit(self, rev: str) -> str | None:
        """``rev`` among the tenant's own commits (KnowledgeBase.resolve_in): another
        tenant's commit is as unknown as one that does not exist."""
        return self.kb.resolve_in(rev, tenant_prefix(self.tenant))

    def _page_entry(self, page_id: str, path: str, blob: str, commit: str) -> dict[str, Any]:
        """One page of a list: its id, title, date, session and memo, or the problem that
        keeps its header from being read."""
        problem: str | None = None
        try:
            meta = self.store.record(page_id, path, blob, commit).page.meta
        except PageFormatError as exc:
            meta, problem = {}, exc.problem
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
        page_id = text_arg(page_id, "page_id")
        with field_named("page_id", "pageId"):
            commit = self._tenant_commit(rev_arg(at))
            if commit is None:
                raise NotFound(f"no page {page_id!r} in tenant {self.tenant!r}")
            stored = self.store.read_stored(page_id, commit)
            if stored.error is not None and not raw:
                # The error names the file the core read (tenant:page); the caller named the
                # page as page_id.
                raise PageFormatError(stored.error.problem, "page_id") from stored.error
        if stored.record is None:  # its header broken, and asked for as stored
            problem = stored.error.problem if stored.error is not None else None
            return page_dict(page_id, stored, None, problem)
        return page_dict(page_id, stored, plain(stored.record.page.meta), None)

    def history(self, page_id: Any = None, limit: Any = None, before: Any = None) -> dict[str, Any]:
        """The newest ``limit`` commits (default ``HISTORY_WINDOW``, at most ``MAX_WINDOW``)
        of one page, or of the whole tenant without ``page_id``, older than the commit
        ``before`` when given, as ``{page_id, commits, more, next_before}``: ``more`` says
        whether older ones were left out, and ``next_before`` (null at the end) is the
        ``before`` that reads on. A cursor, not an offset: commits made meanwhile come at
        the top of a newest-first list, and would shift an offset's windows."""
        n = int_arg(limit, "limit", 1, MAX_WINDOW) or HISTORY_WINDOW
        prefix = tenant_prefix(self.tenant)
        cursor = None
        if before is not None:
            if not isinstance(before, str) or not COMMIT_ID.fullmatch(before):
                raise ValidationError("must be a commit id from this history", "before")
            with field_named("before", "rev"):
                cursor = self._tenant_commit(before)
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
                commits = self.store.history(text_arg(page_id, "page_id"), n + 1, cursor)
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

    def index_status(self) -> dict[str, Any]:
        """How fresh the tenant's index is (``index`` of a search result) and ``summary``, a
        few words for a status bar ("index: 3 behind · 1,200/20,000"). Reads only: it never
        starts a sync."""
        status = self.toolkit.index.status()
        return {**status.as_dict(), "summary": status.short(), "notice": status.notice()}

    def search_ready(self) -> bool:
        """Whether a search now would run without waiting on anything: the tenant's index is
        open and serves HEAD, and the embedding model is loaded. Otherwise a search may wait
        for a catch-up (up to ``index.stale_wait_s``), a git process or the model's loading."""
        from kbmem.index import embedder

        with self._lock:
            toolkit = self._toolkit
        return toolkit is not None and embedder.is_loaded() and bool(toolkit.index.fresh())

    def search(
        self, query: Any, tool: Any = "hybrid", k: Any = 10, *, wait: bool = True
    ) -> dict[str, Any]:
        """The ``k`` best hits of ``tool`` for ``query``, with the index's freshness. Without
        ``wait``, an index found behind HEAD is not waited for: the answer comes from the
        older generation at once, with the notice (kbmem.index.tenant.no_waiting)."""
        if not wait:
            from kbmem.index.tenant import no_waiting

            with no_waiting():
                return self.search(query, tool, k)
        query = request_text(query, "query")
        tool = "hybrid" if tool is None else tool
        if tool not in SEARCH_TOOLS:
            raise ValidationError(f"must be one of {', '.join(SEARCH_TOOLS)}", "tool")
        k = int_arg(10 if k is None else k, "k", 1, 100)
        # The status and the search see one HEAD (and the caller's, if it read one already):
        # the hits are those of the commit the status names, or the notice says how far
        # behind it they are.
        with self.kb.one_head():
            index = self.toolkit.index.status().as_dict()
            hits = self.toolkit.search(query, tool, k)
        return {"query": query, "tool": tool, "hits": [hit_dict(h) for h in hits], "index": index}

    def research_call(
        self,
        request: Any,
        *,
        max_pages: Any = None,
        depth: Any = None,
        max_tokens: Any = None,
        engine: Any = None,
        time_budget_s: Any = None,
    ) -> Callable[[Callable[[Any], None] | None], Any]:
        """Check a research request whole and return the call that runs it (given a trace
        sink, it returns the ``BriefingContext``): a caller that streams the trace can refuse
        bad arguments before its stream begins. ``engine`` is ``offline`` or ``llm``; the LLM
        is the one this memory was opened with, never one the caller names."""
        from kbmem.research.researcher import Researcher

        request = request_text(request, "request")
        limits = {
            "max_pages": int_arg(max_pages, "max_pages", 1, 32),
            "max_depth": int_arg(depth, "depth", 0, 5),
            "max_tokens": int_arg(max_tokens, "max_tokens", 50, 20_000),
        }
        seconds = _seconds_arg(time_budget_s, "time_budget_s")
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
                return researcher.research(
                    request, on_event=on_event, time_budget_s=seconds, **limits
                )
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
        answer: dict[str, Any] = briefing.to_dict(with_trace=trace)
        return answer

    # -- memorizing ---------------------------------------------------------------------------

    def ingest(self, session: Any) -> dict[str, Any]:
        """Memorize one session given in the Summit shape (``tenantId`` may be left out; if
        given it must be this memory's tenant)."""
        from kbmem.memorize.memo import memo_engine
        from kbmem.memorize.memorizer import check_session_size, ingest_session
        from kbmem.memorize.schema import Session
        from kbmem.memorize.sessions import session_from_mapping

        # A field the Summit shape does not have is refused (a misspelt "timestmap" is an
        # error, not a timestamp silently lost); ``kbmem ingest`` leaves such fields be.
        parsed = session_from_mapping(session, self.tenant, Session)
        check_session_size(self.kb, parsed)
        result = ingest_session(self.kb, parsed, memo_engine(self.kb.settings, self.model))
        return ingest_result_dict(result)


def health(kb: KnowledgeBase) -> dict[str, Any]:
    """What a health probe answers (``GET /v1/health``, no token): liveness, the version, and
    ``sync``: this replica's sync with its git remote (ahead/behind as of the last fetch, the
    last sync, the last error, conflict and rescue counts; see docs/sync.md). A load balancer
    reads it to take a replica that stopped syncing out of rotation."""
    from kbmem.sync.background import sync_status

    return {"status": "ok", "version": kbmem_version(), "sync": sync_status(kb).health()}


def _seconds_arg(value: Any, field: str) -> float | None:
    """A request's time budget: None (the setting), or seconds within the hard cap."""
    if value is None:
        return None
    cap = HARD_CAPS["time_budget_s"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= cap:
        raise ValidationError(f"must be a number of seconds, more than 0 and at most {cap}", field)
    return float(value)
