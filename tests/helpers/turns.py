"""Turns committed by hand, as an older kbmem recorded them: for tests of reading them back."""

from __future__ import annotations

from kbmem.agent.provenance import snapshot_files
from kbmem.agent.records import ContextItem, ToolCallRecord, TurnRecord
from kbmem.index.intervals import Interval
from kbmem.store.repository import KnowledgeBase

TENANT = "default"
ROSTER = f"tenants/{TENANT}/notes/team-roster.md"
QUESTION = "Who is Femi Adeyemi's onboarding buddy?"


def commit_older_turn(kb: KnowledgeBase, chat_id: str) -> tuple[str, list[tuple[int, int]]]:
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
