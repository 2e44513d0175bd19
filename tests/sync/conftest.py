"""A real git server on loopback (``git daemon``) and knowledge bases that sync through it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.gitserver import GitServer
from helpers.kbgit import git

from kbmem.memorize.template import init_kb
from kbmem.store.repository import KnowledgeBase
from kbmem.sync.engine import add_remote, sync


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GitServer]:
    base = tmp_path / "srv"
    base.mkdir()
    srv = GitServer(base)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def replicas(tmp_path: Path, server: GitServer) -> Callable[[int], list[KnowledgeBase]]:
    """``replicas(n)``: n knowledge bases over the server: the first made with ``kbmem
    init`` and pushed, the others cloned from the server as a second machine would."""

    def make(n: int) -> list[KnowledgeBase]:
        first = init_kb(tmp_path / "r0", with_history=False)
        first.commit_files({"tenants/default/notes/start.md": b"# Start\n\nThe memory.\n"}, "Add")
        add_remote(first, server.url)
        sync(first)
        kbs = [first]
        for i in range(1, n):
            target = tmp_path / f"r{i}"
            git(tmp_path, "clone", "-q", server.url, str(target))
            kbs.append(KnowledgeBase(target))
        return kbs

    return make
