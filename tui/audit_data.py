"""What the Audit screen shows, read off the UI thread: every turn as ``kbmem turns`` lists
it (with this session's own records), and for one turn its record, every interval it read
resolved at its commit, and its reasoning. No Textual here."""

from __future__ import annotations

import re
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kbmem.errors import KbmemError

from .render import error_text, one_line
from .workspace import Workspace

if TYPE_CHECKING:
    from kbmem.agent.provenance import TurnSummary
    from kbmem.agent.records import ContextItem, TurnRecord

UNREADABLE = "This turn is damaged: its {what} cannot be read (the problem is above)."


def short_chat_id(chat_id: str) -> str:
    """A chat id narrow enough for the list: kbmem's own ids (``20261122-205853-73260f``)
    by their random tail, which tells chats of the same minute apart; a name someone chose
    (``--chat``) as it is, cut at 10 characters. The full id heads the turn's detail."""
    date, _, rest = chat_id.partition("-")
    if len(date) == 8 and date.isdigit() and rest.count("-") == 1:
        return "…" + rest.rsplit("-", 1)[1]
    return one_line(chat_id, 10)


@dataclass
class AuditedTurn:
    """A turn of the list: its summary (from :func:`~kbmem.agent.provenance.list_turns`), and
    its record once read (None until then, and for a damaged turn)."""

    summary: TurnSummary
    record: TurnRecord | None = None
    problem: str = ""  # why the turn cannot be read (a damaged turn's, or found on reading)

    def __post_init__(self) -> None:
        if self.summary.problem and not self.problem:
            self.problem = self.summary.problem

    @property
    def turn_id(self) -> str:
        return self.summary.turn_id

    @property
    def committed(self) -> bool:
        return self.summary.committed

    @property
    def damaged(self) -> bool:
        return bool(self.problem)


@dataclass
class ResolvedInterval:
    """A context item with the file's text at the item's commit (or why it is unreadable),
    and whether the page at HEAD differs from that version."""

    item: ContextItem
    text: str
    problem: str = ""
    changed_since: bool = False


@dataclass
class TurnDetails:
    """What :func:`read_details` found of a turn: its record (None when unreadable, with the
    ``problem``), its intervals resolved, its reasoning, and the commit that recorded it."""

    record: TurnRecord | None
    problem: str
    resolved: list[ResolvedInterval] = field(default_factory=list)
    reasoning: str = ""
    recorded: str | None = None


def list_audited(workspace: Workspace, own: list[TurnRecord]) -> dict[str, AuditedTurn]:
    """The turns as ``kbmem turns`` lists them (a damaged one included, with its problem),
    each read once (an open chat's journal lines of turns git has are passed over), and
    this session's ``own`` records, which the journal may not show yet."""
    from kbmem.agent.provenance import TurnSummary, list_turns

    workspace.check_available()
    tenant = workspace.tenant
    found = {s.turn_id: AuditedTurn(s) for s in list_turns(workspace.kb, tenant).turns}
    for record in own:
        if record.tenant != tenant:
            continue
        audited = found.get(record.turn_id)
        if audited is None:
            summary = TurnSummary(
                record.chat_id,
                record.turn,
                record.question,
                record.status,
                record.started_at,
                False,
            )
            found[record.turn_id] = AuditedTurn(summary, record)
        elif not audited.committed:
            audited.record = record  # shown as it is, without reading the journal back
    return found


def newest_first(found: dict[str, AuditedTurn]) -> list[str]:
    """The turn ids of ``found``, the newest turn first."""

    def started(turn_id: str) -> tuple[float, str, int]:
        s = found[turn_id].summary
        return (s.started_at, s.chat_id, s.turn)

    return sorted(found, key=started, reverse=True)


def read_details(workspace: Workspace, audited: AuditedTurn, show_times: bool) -> TurnDetails:
    """Read the turn (from git if committed, else from the journal) unless it is known;
    resolve every interval at its commit (only the tenant's own pages are read); read the
    committed reasoning (a damaged turn's too, when that file is readable)."""
    from kbmem.agent.provenance import load_turn, render_reasoning

    kb, tenant, s = workspace.kb, workspace.tenant, audited.summary
    record, problem = audited.record, audited.problem
    if record is None and not problem:
        try:
            record, _committed = load_turn(kb, tenant, s.chat_id, s.turn)
        except (KbmemError, ValueError) as exc:  # damaged, or gone, since it was listed
            problem = error_text(exc)
    details = TurnDetails(record, problem)
    if record is not None:
        details.resolved = resolve_intervals(workspace, record)
    if audited.committed:
        details.reasoning, details.recorded = committed_reasoning(workspace, audited)
    if not details.reasoning and record is not None:
        details.reasoning = render_reasoning(record)
    if not show_times:
        details.reasoning = _without_times(details.reasoning)
    return details


def resolve_intervals(workspace: Workspace, record: TurnRecord) -> list[ResolvedInterval]:
    """Every interval the turn read (as ``kbmem audit`` lists them), cited or not, with the
    file's text at the interval's commit. As ``kbmem audit`` resolves them: lines outside
    the file are a problem, and a page that changed after the answer read it is said to."""
    from kbmem.agent.provenance import read_cited_file, resolve_item, turn_intervals

    kb, tenant = workspace.kb, workspace.tenant
    files: dict[tuple[str, str], str] = {}
    resolved = []
    for item in turn_intervals(record):
        checked = resolve_item(kb, tenant, item)
        if checked.error:
            resolved.append(ResolvedInterval(item, "", checked.error))
            continue
        key = (item.path, item.commit or "HEAD")
        try:
            if key not in files:
                files[key] = read_cited_file(kb, tenant, item)
            resolved.append(ResolvedInterval(item, files[key], "", checked.changed_since))
        except KbmemError as exc:
            resolved.append(ResolvedInterval(item, "", error_text(exc)))
    return resolved


def committed_reasoning(workspace: Workspace, audited: AuditedTurn) -> tuple[str, str | None]:
    """A committed turn's reasoning.md ("" when unreadable) and the commit that added its
    snapshot (a later hand edit does not move it)."""
    from kbmem.agent.provenance import turn_dir

    kb, s = workspace.kb, audited.summary
    folder = turn_dir(workspace.tenant, s.chat_id, s.turn)
    recorded = None
    with suppress(KbmemError):
        history = kb.log(folder + "answer.md")
        recorded = history[-1].sha if history else None
    try:
        reasoning = kb.read_bytes(folder + "reasoning.md").decode("utf-8", "replace")
    except KbmemError:
        reasoning = ""
    return reasoning, recorded


def _without_times(reasoning: str) -> str:
    """reasoning.md without its wall-clock lines (for reproducible screenshots)."""
    out = []
    for line in reasoning.splitlines():
        if line.startswith("- Started:"):
            continue
        out.append(_strip_ms(line))
    return "\n".join(out) + "\n"


def _strip_ms(line: str) -> str:
    return re.sub(r", \d+ ms\)", ")", line)
