"""Building sessions for tests: a conversation between named speakers, as the memorizer
takes it."""

from __future__ import annotations

from kbmem.memorize.memorizer import ingest_session
from kbmem.memorize.sessions import session_from_mapping
from kbmem.store.repository import KnowledgeBase


def talk(
    tenant: str, sid: str, turns: list[tuple[str, str]], day: str = "2026-03-01", **extra
) -> dict:
    """A session mapping whose turns are ``(speaker, text)``, held on ``day`` a minute apart."""
    return {
        "tenantId": tenant,
        "sessionId": sid,
        "title": extra.pop("title", sid),
        "turns": [
            {
                "role": "user",
                "content": text,
                "timestamp": f"{day}T10:{n:02d}:00",
                "metadata": {"id": f"t{n + 1}", "speaker": who},
            }
            for n, (who, text) in enumerate(turns)
        ],
        **extra,
    }


def memorize(
    kb: KnowledgeBase, tenant: str, meetings: dict[str, tuple[str, list[tuple[str, str]]]]
) -> None:
    """Memorize each meeting ``sid: (day, turns)`` (see talk) into ``kb``."""
    for sid, (day, turns) in meetings.items():
        ingest_session(kb, session_from_mapping(talk(tenant, sid, turns, day)))
