"""What the Chat screen reads from the knowledge base off the UI thread: the sources of the
suggested questions, and the excerpt of each hit that answers the question (read at the
hit's commit). No Textual here: these run in workers."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from .workspace import Workspace

EXCERPT_CHARS = 90


def suggestion_sources(workspace: Workspace) -> tuple[str, list[str], list[str]]:
    """The knowledge base's README, the titles of the tenant's sessions (newest first; the
    memorized chats left out) and the titles of its notes: what the suggested questions come
    from (see ``suggested_questions``)."""
    import yaml

    from kbmem.memorize.sessions import is_chat

    kb = workspace.kb
    readme = ""
    if kb.head() is not None and kb.blob_id("README.md") is not None:
        readme = kb.read_bytes("README.md").decode("utf-8", "replace")
    store = workspace.store()
    titles: list[tuple[str, str]] = []
    for path in kb.list_files(f"{store.prefix}sessions/"):
        try:
            data = yaml.safe_load(kb.read_bytes(path))
        except yaml.YAMLError:
            continue
        if not isinstance(data, dict) or not data.get("title"):
            continue
        if is_chat(PurePosixPath(path).stem):
            continue  # the chats themselves, memorized
        titles.append((str(data.get("created_at") or ""), str(data["title"])))
    titles.sort(reverse=True)
    notes = []
    for page_id in sorted(store.files()):
        if page_id.endswith(".md"):
            try:
                notes.append(str(store.read(page_id).page.meta.get("title") or page_id))
            except Exception:  # a malformed note is skipped, as the index does
                continue
    return readme, [title for _date, title in titles], notes


def hit_excerpts(
    workspace: Workspace, intervals: list[dict[str, Any]], question: str = ""
) -> dict[str, str]:
    """Each hit read at its commit; its excerpt is the part that answers ``question``. Keyed
    ``<path>#<start>-<end>`` (as the trace panel looks them up)."""
    from kbmem.agent.offline import best_excerpt  # the index's analyzer: load it off-screen
    from kbmem.store.pages import unescape_line

    kb = workspace.kb
    files: dict[tuple[str, str], list[str]] = {}
    excerpts: dict[str, str] = {}
    for iv in intervals:
        path, commit = str(iv.get("path") or ""), str(iv.get("commit") or "HEAD")
        key = (path, commit)
        if key not in files:
            files[key] = kb.read_bytes(path, commit).decode("utf-8", "replace").split("\n")
        lines = files[key][int(iv["start"]) - 1 : int(iv["end"])]
        body = [line for line in lines if not line.startswith("### ")] or lines
        text = "\n".join(unescape_line(line) for line in body)
        excerpts[f"{path}#{iv['start']}-{iv['end']}"] = best_excerpt(text, question, EXCERPT_CHARS)
    return excerpts
