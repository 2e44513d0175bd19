"""``kbmem init``: a new knowledge base from ``kb_template/``, with the example history
committed at the dates it happened, so that ``git log`` reads like the team's two months."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kbmem.errors import StorageError
from kbmem.memorize.memorizer import ingest_session
from kbmem.memorize.sessions import load_sessions, normalize_timestamp
from kbmem.store.pages import parse_page
from kbmem.store.repository import KnowledgeBase
from kbmem.store.template import check_template, template_dir


def _commit_date(iso: str) -> str:
    # git takes ISO 8601; pin a time zone so that the history is the same on every machine.
    return iso if ("+" in iso[10:] or iso.endswith("Z")) else iso + "+00:00"


def seed_events(template: Path) -> list[tuple[str, str, Path]]:
    """``(date, kind, file)`` for every seed session and note, oldest first."""
    events = []
    for path in sorted((template / "seed" / "sessions").glob("*.y*ml")):
        for session in load_sessions(path, None):
            last = max((t.timestamp for t in session.turns if t.timestamp), default="")
            events.append((last or session.created_at, "session", path))
    for path in sorted((template / "tenants").glob("*/notes/**/*.md")):
        page = parse_page(path.read_text(encoding="utf-8"), str(path))
        created = normalize_timestamp(page.meta.get("created_at"), f"{path}: created_at")
        events.append((created, "note", path))
    return sorted(events)


def init_kb(
    target: Path,
    template: Path | None = None,
    with_history: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> KnowledgeBase:
    """Create a knowledge base at ``target``; with ``with_history``, add the example history
    (``progress(done, total)`` counts its sessions and notes).

    The template (by default the one installed with kbmem) is checked before anything is
    created, so a missing or partial template never leaves an empty knowledge base behind."""
    template = template_dir() if template is None else template
    check_template(template)
    events = seed_events(template) if with_history else []
    if with_history and not events:
        # A template whose example history was left out (package data not installed) would
        # make a knowledge base with settings only: refuse rather than pass that off as one.
        raise StorageError(
            f"the example knowledge base at {template} holds no history: no sessions in "
            f"{template / 'seed' / 'sessions'} and no notes under {template / 'tenants'}"
        )
    kb = KnowledgeBase.create(target, template)
    first = events[0][0] if events else None
    settings_files = {
        name: (template / name).read_bytes()
        for name in ("kbmem.yaml", ".gitignore", "README.md")
        if (template / name).exists()
    }
    kb.commit_files(
        settings_files,
        "Initialize knowledge base from kb_template",
        date=_commit_date(first) if first else None,
    )
    for done, (when, kind, path) in enumerate(events):
        if progress:
            progress(done, len(events))
        if kind == "session":
            for session in load_sessions(path, None):
                ingest_session(kb, session, date=_commit_date(when))
        else:
            rel = path.relative_to(template).as_posix()
            title = parse_page(path.read_text(encoding="utf-8")).meta.get("title") or path.stem
            kb.commit_files({rel: path.read_bytes()}, f"Add note: {title}", date=_commit_date(when))
    if progress:
        progress(len(events), len(events))
    return kb
