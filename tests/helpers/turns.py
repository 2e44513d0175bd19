"""Provenance written as a chat's batches would write it, without running an agent: for tests
of the audit, the API and the MCP server that need turns already committed."""

from __future__ import annotations

from kbmem.agent.provenance import snapshot_files, turn_dir
from kbmem.agent.records import ContextItem, ToolCallRecord, TurnRecord
from kbmem.index.intervals import Interval
from kbmem.store.repository import KnowledgeBase

TENANT = "default"
QUESTION = "Who is Femi Adeyemi's onboarding buddy?"
ROSTER = f"tenants/{TENANT}/notes/team-roster.md"


def commit_turn(
    kb: KnowledgeBase,
    chat_id: str,
    turn: int,
    question: str = QUESTION,
    tenant: str = TENANT,
) -> str:
    """Commit a turn's snapshot (one research call, no interval) as a batch would, without
    running an agent; its folder."""
    call = ToolCallRecord("c1", "research", {"request": question}, 10.0, 11.0, result_chars=9)
    record = TurnRecord(
        chat_id,
        turn,
        tenant,
        question,
        "An answer.",
        "complete",
        "offline",
        10.0 + turn,
        11.0 + turn,
        tool_calls=[call],
    )
    kb.commit_files(snapshot_files(record), f"Record chat {chat_id} turn {turn}")
    return turn_dir(tenant, chat_id, turn)


def commit_chat(
    kb: KnowledgeBase,
    chat_id: str,
    turns: int,
    started: float = 10.0,
) -> None:
    """Commit turns 1 to ``turns`` of a chat in one commit (turn n started at ``started``
    + n), as its batches would have."""
    files: dict[str, bytes] = {}
    for n in range(1, turns + 1):
        record = TurnRecord(
            chat_id,
            n,
            TENANT,
            f"Question {n}?",
            "An answer.",
            "complete",
            "offline",
            started + n,
            started + n + 0.5,
        )
        files.update(snapshot_files(record))
    kb.commit_files(files, f"Record chat {chat_id} turns 1-{turns}")


def commit_older_turn(
    kb: KnowledgeBase,
    chat_id: str,
) -> tuple[str, list[tuple[int, int]]]:
    """Commit a turn as the offline agent recorded it before it kept all that it read: a
    research call that gave three intervals of the roster, a context of the one the answer
    cites. The commit they were read at, and their line ranges, the cited one first."""
    commit, blob = kb.head(), kb.blob_id(ROSTER)
    assert commit and blob
    ranges = [(21, 23), (1, 3), (5, 8)]
    given = [
        {
            **Interval("notes/team-roster.md", ROSTER, a, b, commit, blob, "paragraph").to_dict(),
            "retriever": "bm25",
            "score": 0.5 - n / 10,
        }
        for n, (a, b) in enumerate(ranges)
    ]
    call = ToolCallRecord("call-1-1", "research", {"request": QUESTION}, 10.0, 11.0, 99, given)
    cited = ContextItem(
        "notes/team-roster.md", ROSTER, 21, 23, commit, "bm25", 0.5, blob, [], "call-1-1", True
    )
    answer = "From memory:\n- Tobias Ferrante. [notes/team-roster.md:L21-L23]"
    record = TurnRecord(
        chat_id,
        1,
        TENANT,
        QUESTION,
        answer,
        "complete",
        "offline",
        10.0,
        11.0,
        tool_calls=[call],
        context=[cited],
    )
    kb.commit_files(snapshot_files(record), f"Record chat {chat_id} turn 1")
    return commit, ranges
