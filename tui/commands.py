"""The command palette's kbmem commands, titled "area: action"."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from .app import KbmemApp


class KbmemCommands(Provider):
    """chat: new · kb: reindex · kb: commit now · view: … · engine: choose model · app: help"""

    def commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        app = cast("KbmemApp", self.app)
        return [
            ("chat: new", "Start a new chat (the current one's turns are committed)", app.new_chat),
            ("kb: reindex", "Bring the tenant's index up to the latest commit", app.reindex),
            ("kb: commit now", "Commit the pending turns without waiting", app.commit_now),
            ("view: chat", "The conversation and its research trace", lambda: app.show("chat")),
            ("view: history", "Pages, versions in git, diffs", lambda: app.show("history")),
            ("view: audit", "What each turn rested on", lambda: app.show("audit")),
            ("engine: choose model", "The offline agent or a litellm model", app.choose_model),
            ("app: help", "Keys, screens and commands", app.action_help),
        ]

    async def discover(self) -> Hits:
        for title, text, callback in self.commands():
            yield DiscoveryHit(title, callback, help=text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, text, callback in self.commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, text=title, help=text)
