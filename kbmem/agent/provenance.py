"""Provenance of chat turns: the snapshot a turn leaves under
``tenants/<tenant>/turns/<chat-id>/<turn>/``, reading it back from git, and the audit.

Snapshot files:

- ``reasoning.md``: for people: the request, the plan, each tool call and what was used.
- ``tool_calls.jsonl``: one JSON object per tool call: name, arguments, start and end times,
  duration, result size, intervals (page, path, lines, commit, retriever, score), error.
- ``context_pack.yaml``: the turn (question, status, agent, times) and every interval the
  turn read (what its tool calls gave the agent): page id, path, lines, commit, blob,
  retriever, score, and whether the answer cites it.
- ``answer.md``: the answer, exactly as the user saw it.

Intervals name the commit they were read at, so an audit shows the text the answer rested on
even after the page was edited or deleted.
"""

from __future__ import annotations

import heapq
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml

from kbmem.agent.records import ContextItem, ToolCallRecord, TurnRecord
from kbmem.errors import NotFound, TenantError, ValidationError
from kbmem.ids import check_segment, check_tenant, is_segment, page_id_for
from kbmem.store.pages import Loader, dump_yaml
from kbmem.store.pagestore import tenant_prefix
from kbmem.store.repository import KnowledgeBase
from kbmem.textutil import markdown_text

SNAPSHOT_FILES = ("reasoning.md", "tool_calls.jsonl", "context_pack.yaml", "answer.md")
# What a turn is read back from (reasoning.md is for people; it is rendered again if need be).
READ_FILES = ("context_pack.yaml", "answer.md", "tool_calls.jsonl")
# What a turn's exchange (question, answer, status, times) is read back from.
EXCHANGE_FILES = ("context_pack.yaml", "answer.md")
MAX_TURN = 999_999
# ASCII digits only, no leading zero: str.isdigit() takes "²", which int() refuses.
_TURN_NUMBER = re.compile(r"[1-9][0-9]{0,5}")


class TurnFormatError(ValidationError):
    """A committed turn's snapshot file that cannot be read back (malformed, of the wrong
    shape, or missing beside the others): stored data, not the request, is at fault, so not
    a 400 in the API (as for a page, see :class:`~kbmem.errors.PageFormatError`)."""

    http_status = 422


def check_turn_number(value: object) -> int:
    """A turn number as a path segment: a whole number from 1 to 999999."""
    text = str(value)
    if not _TURN_NUMBER.fullmatch(text):
        raise ValidationError(
            f"{value!r} is not a turn number: it must be a whole number from 1 to {MAX_TURN}",
            "turn",
        )
    return int(text)


def chat_dir(tenant: str, chat_id: str) -> str:
    """Repository-relative folder of a chat's turns (every part validated)."""
    return f"{tenant_prefix(tenant)}turns/{check_segment(chat_id, 'chat_id')}/"


def turn_dir(tenant: str, chat_id: str, turn: int) -> str:
    """Repository-relative folder of a turn's snapshot (every part validated)."""
    return f"{chat_dir(tenant, chat_id)}{check_turn_number(turn)}/"


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")


def _epoch(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, datetime):
        return value.timestamp()
    try:
        return datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        return 0.0


# -- writing ----------------------------------------------------------------------------------


def snapshot_files(record: TurnRecord) -> dict[str, bytes]:
    """``{repository path: bytes}`` of the turn's snapshot."""
    folder = turn_dir(record.tenant, record.chat_id, record.turn)
    calls = "".join(
        json.dumps(_call_line(c), ensure_ascii=False, sort_keys=False) + "\n"
        for c in record.tool_calls
    )
    answer = record.answer if record.answer.endswith("\n") else record.answer + "\n"
    return {
        folder + "reasoning.md": render_reasoning(record).encode("utf-8"),
        folder + "tool_calls.jsonl": calls.encode("utf-8"),
        folder + "context_pack.yaml": dump_yaml(context_pack(record)).encode("utf-8"),
        folder + "answer.md": answer.encode("utf-8"),
    }


def _call_line(call: ToolCallRecord) -> dict[str, Any]:
    return {
        "call_id": call.call_id,
        "name": call.name,
        "arguments": call.arguments,
        "origin": call.origin,
        "started_at": iso(call.started_at),
        "finished_at": iso(call.finished_at),
        "duration_ms": call.duration_ms,
        "result_chars": call.result_chars,
        "intervals": call.intervals,
        "error": call.error,
    }


def context_pack(record: TurnRecord) -> dict[str, Any]:
    return {
        "chat_id": record.chat_id,
        "turn": record.turn,
        "tenant": record.tenant,
        "question": record.question,
        "status": record.status,
        "error": record.error,
        "agent": record.agent,
        "model": record.model,
        "started_at": iso(record.started_at),
        "finished_at": iso(record.finished_at),
        "duration_ms": record.duration_ms,
        "intervals": [
            {
                "page_id": c.page_id,
                "path": c.path,
                "lines": [c.start, c.end],
                "commit": c.commit,
                "blob": c.blob,
                "retriever": c.retriever,
                "score": c.score,
                "cited": c.cited,
                "call_id": c.call_id,
                "turn_ids": list(c.turn_ids),
                # What the agent was shown of a turn carried in part (see ContextItem.shown).
                **({"shown": c.shown} if c.shown else {}),
            }
            for c in record.context
        ],
    }


def render_reasoning(record: TurnRecord) -> str:
    model = f", model {record.model}" if record.model else ""
    lines = [
        f"# Turn {record.turn} of chat {record.chat_id}",
        "",
        f"- Tenant: {record.tenant}",
        f"- Agent: {record.agent}{model}",
        f"- Status: {record.status}" + (f" ({record.error})" if record.error else ""),
        f"- Started: {iso(record.started_at)}; took {record.duration_ms:.0f} ms",
        "",
        "## Request",
        "",
        record.question.strip(),
        "",
        "## Tool calls",
        "",
    ]
    if not record.tool_calls:
        lines.append("None.")
    for n, call in enumerate(record.tool_calls, start=1):
        args = json.dumps(call.arguments, ensure_ascii=False)
        lines.append(
            f"{n}. `{call.name}` {args} ({call.origin}, {call.duration_ms:.0f} ms): {call.summary}"
        )
        lines += [f"   - {step}" for step in _plan_lines(call.trace)]
    lines += ["", "## Reasoning", ""]
    lines += [f"- {note}" for note in record.reasoning] or ["None recorded."]
    lines += ["", "## Used", ""]
    if not record.context:
        lines.append("No interval of memory.")
    for item in record.context:
        mark = "cited" if item.cited else "shown to the agent"
        lines.append(
            f"- {item.citation()} `{item.path}` at {item.commit[:10]} "
            f"({item.retriever}, score {item.score:.4f}, {mark})"
        )
    return "\n".join(lines) + "\n"


def _plan_lines(trace: list[dict[str, Any]]) -> list[str]:
    """The research plan, step by step, from a research call's trace."""
    out = []
    for event in trace:
        kind, step = event.get("kind"), event.get("step")
        if kind == "plan":
            actions = [
                f"{a.get('tool')} {a.get('query') or ','.join(a.get('pageIds') or [])!r}"
                + (f" among {a['speaker']}'s turns" if a.get("speaker") else "")
                for a in event.get("actions") or []
            ]
            out.append(f"step {step} plan: " + ("; ".join(actions) or "nothing new to search"))
        elif kind == "reflect":
            verdict = "done" if event.get("done") else "continue"
            missing = f", missing: {event['missingInfo']}" if event.get("missingInfo") else ""
            out.append(f"step {step} reflect: {verdict}{missing}")
        elif kind == "fallback":
            out.append(
                f"step {step} fallback to offline {event.get('stage')}: {event.get('error')}"
            )
        elif kind == "done":
            out.append(
                f"done: {event.get('evidence')} evidence passage(s), pages "
                f"{', '.join(event.get('pagesUsed') or []) or 'none'}"
            )
    return out


# -- reading back ---------------------------------------------------------------------------


@dataclass
class TurnSummary:
    """One line of ``kbmem turns``."""

    chat_id: str
    turn: int
    question: str
    status: str  # a turn status, or "damaged" when its committed files cannot be read
    started_at: float
    committed: bool
    problem: str | None = None  # what is damaged

    @property
    def turn_id(self) -> str:
        return f"{self.chat_id}/{self.turn}"


def _load_yaml(data: bytes, where: str) -> dict[str, Any]:
    try:
        value = yaml.load(data, Loader=Loader)
    except yaml.YAMLError as exc:
        raise TurnFormatError(f"malformed YAML ({exc})", where) from exc
    if not isinstance(value, dict):
        raise TurnFormatError("must be a mapping", where)
    return value


def _problem(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return str(exc)


def _tool_calls(data: bytes, where: str) -> list[ToolCallRecord]:
    calls = []
    for n, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TurnFormatError(
                f"line {n}: malformed JSON ({exc.msg} at column {exc.colno})", where
            ) from exc
        except UnicodeDecodeError as exc:
            raise TurnFormatError(f"line {n}: not UTF-8 text", where) from exc
        if not isinstance(value, dict):
            raise TurnFormatError(f"line {n}: must be a JSON object", where)
        try:
            value["started_at"] = _epoch(value.get("started_at"))
            value["finished_at"] = _epoch(value.get("finished_at"))
            call = ToolCallRecord.from_dict(value)
        except (KeyError, TypeError, ValueError) as exc:
            raise TurnFormatError(f"line {n}: {_problem(exc)}", where) from exc
        if not all(isinstance(iv, dict) for iv in call.intervals):
            raise TurnFormatError(f"line {n}: intervals must be JSON objects", where)
        calls.append(call)
    return calls


def _context(pack: dict[str, Any], where: str) -> list[ContextItem]:
    items = pack.get("intervals") or []
    if not isinstance(items, list):
        raise TurnFormatError("intervals must be a list", where)
    context = []
    for n, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise TurnFormatError(f"interval {n} must be a mapping", where)
        try:
            lines = item.get("lines") or [0, 0]
            context.append(ContextItem.from_dict({**item, "start": lines[0], "end": lines[1]}))
        except (IndexError, KeyError, TypeError, ValueError) as exc:
            raise TurnFormatError(f"interval {n}: {_problem(exc)}", where) from exc
    return context


def _record_from_files(
    tenant: str,
    chat_id: str,
    turn: int,
    files: dict[str, bytes | None],
    names: tuple[str, ...] = READ_FILES,
) -> TurnRecord:
    """A turn from its snapshot files (``{name: bytes, or None when missing}``), read from
    ``names`` (EXCHANGE_FILES: no tool calls); TurnFormatError naming the file, and the line
    or interval, when one cannot be read."""
    folder = turn_dir(tenant, chat_id, turn)
    raw: dict[str, bytes] = {}
    for name in names:
        data = files.get(name)
        if data is None:
            raise TurnFormatError("missing, though the turn's folder is committed", folder + name)
        raw[name] = data
    pack = _load_yaml(raw["context_pack.yaml"], folder + "context_pack.yaml")
    context = _context(pack, folder + "context_pack.yaml")
    try:
        answer = raw["answer.md"].decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw["answer.md"][: exc.start].count(b"\n") + 1
        raise TurnFormatError(f"line {line}: not UTF-8 text", folder + "answer.md") from exc
    calls = (
        _tool_calls(raw["tool_calls.jsonl"], folder + "tool_calls.jsonl")
        if "tool_calls.jsonl" in raw
        else []
    )
    return TurnRecord(
        chat_id=chat_id,
        turn=turn,
        tenant=tenant,
        question=str(pack.get("question") or ""),
        answer=answer[:-1] if answer.endswith("\n") else answer,
        status=str(pack.get("status") or "complete"),
        agent=str(pack.get("agent") or ""),
        started_at=_epoch(pack.get("started_at")),
        finished_at=_epoch(pack.get("finished_at")),
        model=pack.get("model"),
        tool_calls=calls,
        context=context,
        error=pack.get("error"),
    )


def read_turn(
    kb: KnowledgeBase,
    tenant: str,
    chat_id: str,
    turn: int,
    rev: str = "HEAD",
    names: tuple[str, ...] = READ_FILES,
) -> TurnRecord:
    """A committed turn, rebuilt from its snapshot at ``rev`` (from the files ``names``:
    EXCHANGE_FILES for its question and answer only, without its tool calls). NotFound if it
    has none; TurnFormatError if its files cannot be read (see :func:`_record_from_files`)."""
    folder = turn_dir(tenant, chat_id, turn)
    files: dict[str, bytes | None] = {}
    for name in names:
        try:
            files[name] = kb.read_bytes(folder + name, rev)
        except NotFound:
            files[name] = None
    if all(data is None for data in files.values()) and not kb.list_files(folder, rev):
        raise NotFound(f"no committed turn {chat_id}/{turn} in tenant {tenant!r}")
    return _record_from_files(tenant, chat_id, turn, files, names)


def committed_turn_numbers(
    kb: KnowledgeBase, tenant: str, chat_id: str | None = None
) -> dict[str, list[int]]:
    """``{chat id: [turn, ...]}`` (in turn order) of the turn folders at HEAD, one chat's or
    all: a tree read a chat, no file read. A turn with a snapshot file deleted or damaged
    still counts as committed; a folder that names no chat or turn (made by hand) does not."""
    turns = f"{tenant_prefix(check_tenant(tenant))}turns/"
    out: dict[str, list[int]] = {}
    for chat in [check_segment(chat_id, "chat_id")] if chat_id is not None else kb.folders(turns):
        if not is_segment(chat):
            continue
        numbers = [int(n) for n in kb.folders(f"{turns}{chat}/") if _TURN_NUMBER.fullmatch(n)]
        if numbers:
            out[chat] = sorted(numbers)
    return out


# -- listing and audit ------------------------------------------------------------------------


class TurnListing:
    """The turns of a tenant's chats (or of one chat), committed and pending, read only as far
    as what is asked of them needs.

    Which turns there are is known before any is read: the committed ones from git's trees (a
    tree a chat), the others from the chat journals, whose lines for turns git already has are
    passed over unparsed (see :func:`~kbmem.agent.journal.read_journal`). The order is each
    chat's turns by number, the chats merged by when their turns started (then chat id and
    turn number): a committed turn is read when a window shows it or, across chats, when its
    start time decides what comes before the window. A committed turn whose files cannot be
    read is listed all the same, as "damaged" with the problem: an auditor must see that it
    exists."""

    def __init__(self, kb: KnowledgeBase, tenant: str, chat_id: str | None = None):
        self.kb = kb
        self.tenant = check_tenant(tenant)
        self.chats = committed_turn_numbers(kb, self.tenant, chat_id)
        self._read = _journaled_turns(kb, self.tenant, chat_id, self.chats)
        for chat, turn in self._read:
            self.chats.setdefault(chat, []).append(turn)
        for turns in self.chats.values():
            turns.sort()
        self.total = sum(map(len, self.chats.values()))

    def window(self, limit: int | None = None, offset: int = 0) -> list[TurnSummary]:
        """The turns from ``offset`` on, at most ``limit`` (None: all of them)."""
        if offset >= self.total:
            return []
        end = None if limit is None else offset + limit
        return [self.summary(c, t) for c, t in itertools.islice(self._ordered(), offset, end)]

    def latest(self) -> TurnSummary | None:
        """The turn the listing ends with (None when there is none): each chat's last turn is
        read, no other."""
        last = [self.summary(chat, turns[-1]) for chat, turns in self.chats.items()]
        return max(last, key=lambda s: (s.started_at, s.chat_id, s.turn), default=None)

    def _ordered(self) -> Iterator[tuple[str, int]]:
        """``(chat id, turn)`` in the listing's order: one chat's without reading a turn."""
        if len(self.chats) == 1:
            ((chat, turns),) = self.chats.items()
            return ((chat, turn) for turn in turns)
        merged = heapq.merge(*(self._by_start(c, t) for c, t in sorted(self.chats.items())))
        return ((chat, turn) for _started, chat, turn in merged)

    def _by_start(self, chat: str, turns: list[int]) -> Iterator[tuple[float, str, int]]:
        for turn in turns:
            yield self.summary(chat, turn).started_at, chat, turn

    def summary(self, chat: str, turn: int) -> TurnSummary:
        """A turn's line of the list: from its journal, else read from git (once)."""
        key = (chat, turn)
        if key not in self._read:
            self._read[key] = _committed_summary(self.kb, self.tenant, chat, turn)
        return self._read[key]


@dataclass
class TurnWindow:
    """A window of a :class:`TurnListing`: its turns, from ``offset`` on, and how many the
    listing holds."""

    turns: list[TurnSummary]
    total: int
    offset: int = 0

    @property
    def next_offset(self) -> int | None:
        """The offset that reads on; None at the end."""
        end = self.offset + len(self.turns)
        return end if end < self.total else None


def list_turns(
    kb: KnowledgeBase,
    tenant: str,
    chat_id: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> TurnWindow:
    """A window of the tenant's chat turns (or of one chat's), in the order of
    :class:`TurnListing`: ``limit`` turns (None: all) from ``offset``, and the total. Only the
    window's turns are read (across chats, also those before it, for their start times).
    NotFound for a chat the tenant does not have (see :func:`known_chat`); a chat open, or
    closed before its first turn, has none."""
    if limit is not None and limit < 1:
        raise ValidationError("must be at least 1", "limit")
    if offset < 0:
        raise ValidationError("must not be negative", "offset")
    listing = TurnListing(kb, tenant, chat_id)
    if chat_id is not None and listing.total == 0 and not known_chat(kb, tenant, chat_id):
        raise NotFound(f"tenant {tenant!r} has no chat {chat_id!r}")
    return TurnWindow(listing.window(limit, offset), listing.total, offset)


def known_chat(kb: KnowledgeBase, tenant: str, chat_id: str) -> bool:
    """Whether the tenant has the chat ``chat_id``: with turns committed, with a journal or a
    lock (open now, or with turns not committed yet), or started by a client and closed
    before its first turn (see :func:`~kbmem.agent.journal.record_chat`)."""
    from kbmem.agent.journal import chat_record, journaled_chat

    return (
        kb.has_path(chat_dir(tenant, chat_id))
        or journaled_chat(kb, tenant, chat_id)
        or chat_record(kb, tenant, chat_id).exists()
    )


def _committed_summary(kb: KnowledgeBase, tenant: str, chat_id: str, turn: int) -> TurnSummary:
    """A committed turn's line of the list, read from its files as an audit reads them: a
    turn whose files cannot be read is listed as damaged, with the problem."""
    folder = turn_dir(tenant, chat_id, turn)
    blobs = {path[len(folder) :]: blob for path, blob in kb.list_files(folder).items()}
    files = {name: kb.read_blob(blobs[name]) if name in blobs else None for name in READ_FILES}
    try:
        record = _record_from_files(tenant, chat_id, turn, files)
    except TurnFormatError as exc:
        return _damaged(chat_id, turn, files["context_pack.yaml"], str(exc))
    return TurnSummary(chat_id, turn, record.question, record.status, record.started_at, True)


def _journaled_turns(
    kb: KnowledgeBase, tenant: str, chat_id: str | None, committed: dict[str, list[int]]
) -> dict[tuple[str, int], TurnSummary]:
    """The lines of the turns only the journals hold (not committed yet, or committed but not
    at HEAD): a journal's lines for the turns ``committed`` lists are not parsed."""
    from kbmem.agent.journal import journal_paths, read_journal

    in_git = {(chat, turn) for chat, turns in committed.items() for turn in turns}

    def lacking(owner: str, chat: str, turn: int) -> bool:
        return owner == tenant and (chat, turn) not in in_git

    out: dict[tuple[str, int], TurnSummary] = {}
    for path in journal_paths(kb, tenant, chat_id):
        state = read_journal(path, keep=lacking)
        for record in state.turns:
            out.setdefault(
                (record.chat_id, record.turn),
                TurnSummary(
                    record.chat_id,
                    record.turn,
                    record.question,
                    record.status,
                    record.started_at,
                    record.turn in state.committed,
                ),
            )
    return out


def _damaged(chat_id: str, turn: int, pack: bytes | None, problem: str) -> TurnSummary:
    """A turn that cannot be read whole, with its question and time if its
    context_pack.yaml still gives them."""
    try:
        fields = _load_yaml(pack or b"", "context_pack.yaml")
    except TurnFormatError:
        fields = {}
    question = str(fields.get("question") or "")
    return TurnSummary(
        chat_id, turn, question, "damaged", _epoch(fields.get("started_at")), True, problem
    )


def parse_turn_id(text: str) -> tuple[str, int]:
    """``<chat-id>/<n>`` → ``(chat id, n)``, validated."""
    chat, sep, number = text.strip().rpartition("/")
    if not sep or not chat:
        raise ValidationError(f"{text!r} is not a turn; write it as <chat-id>/<n>", "TURN")
    return check_segment(chat, "chat_id"), check_turn_number(number)


def load_turn(kb: KnowledgeBase, tenant: str, chat_id: str, turn: int) -> tuple[TurnRecord, bool]:
    """A turn from git, else from the journal; and whether it is committed."""
    from kbmem.agent.journal import journal_paths, read_journal

    if kb.head() is not None:
        try:
            return read_turn(kb, tenant, chat_id, turn), True
        except NotFound:
            pass
    wanted = (tenant, chat_id, turn)
    for path in journal_paths(kb, tenant, chat_id):
        state = read_journal(path, keep=lambda owner, chat, n: (owner, chat, n) == wanted)
        if state.turns:
            return state.turns[-1], turn in state.committed
    raise NotFound(f"no turn {chat_id}/{turn} in tenant {tenant!r}")


@dataclass
class ResolvedInterval:
    """An interval of a turn's context, read at the commit it was retrieved from."""

    item: ContextItem
    text: str
    error: str | None = None  # why it could not be read
    changed_since: bool = False  # the page at HEAD differs from the version cited


@dataclass
class TurnAudit:
    record: TurnRecord
    committed: bool
    recorded_in: str | None  # the commit that added the snapshot
    intervals: list[ResolvedInterval]

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn": self.record.turn_id,
            "committed": self.committed,
            "recorded_in": self.recorded_in,
            "question": self.record.question,
            "status": self.record.status,
            "agent": self.record.agent,
            "model": self.record.model,
            "tool_calls": [
                {k: v for k, v in c.to_dict().items() if k != "trace"}
                for c in self.record.tool_calls
            ],
            "intervals": [
                {
                    **r.item.to_dict(),
                    "text": r.text,
                    "error": r.error,
                    "changed_since": r.changed_since,
                }
                for r in self.intervals
            ],
            "answer": self.record.answer,
        }


def refused_path(tenant: str, item: ContextItem) -> str | None:
    """Why an audit for ``tenant`` must not read ``item.path``, or None when it may.

    A snapshot is only data in git: anyone who can commit can make an interval name any file,
    another tenant's included. An audit reads only the tenant's own pages, as
    :func:`~kbmem.ids.page_id_for` recognizes them under ``tenants/<tenant>/``, and only at
    the path of the page the interval names (as the agent's tools check intervals)."""
    prefix = tenant_prefix(tenant)
    page_id = page_id_for(item.path[len(prefix) :]) if item.path.startswith(prefix) else None
    if page_id is None:
        return f"refused: {item.path!r} is not a page of tenant {tenant!r}; it was not read"
    if page_id != item.page_id:
        return f"refused: page {item.page_id!r} does not live at {item.path!r}; it was not read"
    return None


def read_cited_file(kb: KnowledgeBase, tenant: str, item: ContextItem) -> str:
    """The whole file an interval cites, as it was at its commit: the one way audits read
    stored provenance, so none reads a file outside the tenant's pages (TenantError, see
    :func:`refused_path`)."""
    refused = refused_path(tenant, item)
    if refused:
        raise TenantError(refused)
    return kb.read_bytes(item.path, item.commit or "HEAD").decode("utf-8", "replace")


def resolve_item(kb: KnowledgeBase, tenant: str, item: ContextItem) -> ResolvedInterval:
    """The interval's lines exactly as they were at its commit (see :func:`read_cited_file`)."""
    try:
        text = read_cited_file(kb, tenant, item)
    except (NotFound, ValidationError, TenantError) as exc:
        return ResolvedInterval(item, "", str(exc))
    lines = text.split("\n")
    if item.start < 1 or item.end < item.start or item.end > len(lines):
        return ResolvedInterval(
            item, "", f"lines {item.start}-{item.end} are outside the file ({len(lines)} lines)"
        )
    at_head = kb.blob_id(item.path) if kb.head() else None
    cited_blob = item.blob or kb.blob_id(item.path, item.commit or "HEAD")
    return ResolvedInterval(
        item, "\n".join(lines[item.start - 1 : item.end]), None, at_head != cited_blob
    )


def turn_intervals(record: TurnRecord) -> list[ContextItem]:
    """Every interval the turn read: its context (each marked cited or not), then any
    interval a tool call gave the agent that the context lacks, as not cited. A turn
    recorded before the offline agent kept what it read, not only what it cited, has those
    only in its tool calls; an audit must show them all the same."""
    out = list(record.context)
    seen = {(c.path, c.start, c.end, c.commit) for c in out}
    for call in record.tool_calls:
        for data in call.intervals:
            try:
                item = ContextItem.from_dict({**data, "call_id": call.call_id, "cited": False})
            except (KeyError, TypeError, ValueError):
                continue  # an interval that names no lines is nothing an audit can read
            key = (item.path, item.start, item.end, item.commit)
            if key not in seen:
                seen.add(key)
                out.append(item)
    return out


def audit_turn(kb: KnowledgeBase, tenant: str, chat_id: str, turn: int) -> TurnAudit:
    """Everything ``kbmem audit`` shows for one turn: every interval it read (see
    :func:`turn_intervals`), resolved at its commit."""
    record, committed = load_turn(kb, tenant, chat_id, turn)
    recorded_in = None
    if committed and kb.head() is not None:
        history = kb.log(turn_dir(tenant, chat_id, turn) + "answer.md")
        recorded_in = history[-1].sha if history else None
    return TurnAudit(
        record,
        committed,
        recorded_in,
        [resolve_item(kb, tenant, c) for c in turn_intervals(record)],
    )


def last_turn(kb: KnowledgeBase, tenant: str) -> tuple[str, int]:
    """The tenant's most recent turn, the last of :func:`list_turns` (each chat's last turn is
    read, no other); NotFound when there is none."""
    latest = TurnListing(kb, tenant).latest()
    if latest is None:
        raise NotFound(f"tenant {tenant!r} has no chat turns yet")
    return latest.chat_id, latest.turn


def render_audit(audit: TurnAudit) -> str:
    """A turn's audit as plain text: where it is recorded, the question, the tools called,
    the intervals it read (each as it was at its commit) and the answer."""
    r = audit.record
    out = _audit_head(audit)
    out += ["", "Question:", _indent(r.question), "", "Tools called:"]
    if not r.tool_calls:
        out.append("  none")
    for n, call in enumerate(r.tool_calls, start=1):
        args = json.dumps(call.arguments, ensure_ascii=False)
        result = f"error: {call.error}" if call.error else f"{call.result_chars} chars"
        out.append(
            f"  {n}. {call.name} {args} [{call.origin}] {call.duration_ms:.0f} ms, {result}, "
            f"{len(call.intervals)} interval(s)"
        )
    # The cited intervals first, then the others the agent was shown, each in the order read.
    shown = sorted(audit.intervals, key=lambda res: not res.item.cited)
    quoted = [res.item for res in shown if res.item.cited]
    out += [
        "",
        f"Intervals the turn read ({len(shown)}, {len(quoted)} cited by the answer), each as it "
        "was at its commit:",
    ]
    if not shown:
        out.append("  none")
    for res in shown:
        out += _audit_interval(res, quoted)
    # Plain text: the answer without the backslashes that keep its quotes literal Markdown.
    out += ["", "Answer:", _indent(markdown_text(r.answer))]
    return "\n".join(out) + "\n"


def _audit_head(audit: TurnAudit) -> list[str]:
    """The audit's first lines: which turn, by which agent, and where it is recorded."""
    r = audit.record
    where = (
        f"recorded in commit {audit.recorded_in[:10]}"
        if audit.recorded_in
        else "committed"
        if audit.committed
        else "journaled, not committed yet"
    )
    model = f" ({r.model})" if r.model else ""
    out = [
        f"Turn {r.turn_id} — tenant {r.tenant}, {r.agent} agent{model}, {r.status}, "
        f"{iso(r.started_at)}, {r.duration_ms:.0f} ms; {where}",
    ]
    if r.error:
        out.append(f"Error: {r.error}")
    return out


def _audit_interval(res: ResolvedInterval, quoted: list[ContextItem]) -> list[str]:
    """One interval a turn read, as the audit shows it: its citation and what it was to the
    answer, then its lines at its commit (``quoted``: the intervals the answer cites)."""
    item = res.item
    flags = ["cited" if item.cited else "shown to the agent"]
    within = [
        f"L{c.start}-L{c.end}"
        for c in quoted
        if (c.path, c.commit) == (item.path, item.commit)
        and item.start <= c.start <= c.end <= item.end
    ]
    if within and not item.cited:
        flags.append(f"the answer cites {', '.join(within)} of it")
    if res.changed_since:
        flags.append("page changed since")
    out = [
        f"  {item.citation()} {item.path} @ {item.commit[:10] or 'HEAD'} "
        f"({item.retriever}, score {item.score:.4f}; {', '.join(flags)})"
    ]
    if item.shown:
        # An audit must not claim the agent read all of a turn it was shown in part: that
        # part, then (as the Audit screen shows them) the lines at their commit.
        out.append("    carried in part; the agent was shown only:")
        out += [f"    > {line}" for line in item.shown.split("\n")]
    if res.error:
        out.append(f"    ! {res.error}")
    else:
        out += [f"    | {line}" for line in res.text.split("\n")]
    return out


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.split("\n"))
