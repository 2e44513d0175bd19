"""What the screens share: the knowledge base, the tenant, the model, and lazily opened core
objects. The heavy core modules (indexes, embedder, researcher) are imported on first use, in a
worker, so that the first screen paints before they have loaded."""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kbmem.errors import StorageError
from kbmem.store.pagestore import PageStore
from kbmem.store.repository import KnowledgeBase

if TYPE_CHECKING:
    from kbmem.research.toolkit import Toolkit


@dataclass
class Workspace:
    """One knowledge base and tenant as the UI sees them."""

    kb: KnowledgeBase
    tenant: str
    model: str | None = None
    kb_label: str = ""
    _toolkit: Toolkit | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if not self.kb_label:
            self.kb_label = self.kb.root.name
        if self.model is None:
            self.model = self.kb.settings.model

    @property
    def engine(self) -> str:
        """``llm`` when a model is configured, else ``offline``."""
        return "llm" if self.model else "offline"

    @property
    def batch_turns(self) -> int:
        return self.kb.settings.batch_turns

    def kb_for_chat(self) -> KnowledgeBase:
        """The knowledge base with the chosen model in its settings: choosing the offline
        agent must win over a model that ``kbmem.yaml`` or ``KBMEM_MODEL`` names."""
        if (self.model or None) == self.kb.settings.model:
            return self.kb
        settings = copy.deepcopy(self.kb.settings)
        settings.data["llm"]["model"] = self.model or None
        return KnowledgeBase(self.kb.root, settings)

    def store(self, tenant: str | None = None) -> PageStore:
        return PageStore(self.kb, tenant or self.tenant)

    @property
    def toolkit(self) -> Toolkit:
        """The tenant's retrieval toolkit (opened once; call from a worker: slow imports)."""
        with self._lock:
            if self._toolkit is None:
                from kbmem.research.toolkit import Toolkit

                self._toolkit = Toolkit(self.kb, self.tenant)
            return self._toolkit

    def check_available(self) -> None:
        """Raise StorageError when the knowledge base's folder or repository is gone (moved,
        deleted, an unmounted disk): git would otherwise just look empty."""
        if not (self.kb.root / ".git").exists():
            raise StorageError(f"the knowledge base {self.kb.root} is not there any more")

    def tenants(self) -> list[str]:
        """Every tenant that has files in HEAD, the current one first."""
        found = {path.split("/")[1] for path in self.kb.list_files("tenants")}
        found.add(self.tenant)
        return sorted(found, key=lambda t: (t != self.tenant, t))
