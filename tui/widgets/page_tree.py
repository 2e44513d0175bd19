"""The History screen's tree of files: for each tenant its MEMORY.md, its sessions (each
with its pages, in order) and its notes."""

from __future__ import annotations

from textual.widgets import Tree

from ..history_data import Entry, Listing
from ..render import plain


class PageTree(Tree[Entry]):
    """The files the History screen can show; a leaf's data is its :class:`Entry`."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("pages", id=id)
        self.show_root = False
        self.border_title = "Pages"

    def fill(self, listing: Listing) -> None:
        """The tree anew from ``listing`` (see ``tree_listing``); the first tenant open."""
        self.clear()
        for n, (tenant, files, memory) in enumerate(listing):
            top = self.root.add(plain(tenant, "bold"), expand=n == 0)
            if memory:
                top.add_leaf(plain("MEMORY.md", "italic"), data=Entry(tenant, memory, None))
            sessions: dict[str, list[tuple[int, str, str]]] = {}
            notes: list[tuple[str, str]] = []
            for page_id, (path, _blob) in files.items():
                session, _, number = page_id.rpartition("/")
                if not page_id.endswith(".md") and number.isdigit():
                    sessions.setdefault(session, []).append((int(number), page_id, path))
                else:
                    notes.append((page_id, path))
            branch = top.add(plain(f"sessions ({len(sessions)})"), expand=n == 0)
            for session in sorted(sessions):
                node = branch.add(plain(session))
                for seq, page_id, path in sorted(sessions[session]):
                    node.add_leaf(plain(f"page {seq}"), data=Entry(tenant, path, page_id))
            branch = top.add(plain(f"notes ({len(notes)})"), expand=n == 0)
            for page_id, path in sorted(notes):
                branch.add_leaf(plain(page_id), data=Entry(tenant, path, page_id))
