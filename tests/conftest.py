"""Shared fixtures: real git repositories in tmp_path, the example knowledge base, and a real
llama.cpp server running SmolLM2 for the LLM paths."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmem.index.tenant import TenantIndex
from kbmem.llm.local import LocalLLMServer
from kbmem.memorize.template import init_kb
from kbmem.store.repository import KnowledgeBase

ROOT = Path(__file__).resolve().parent.parent
LOCOMO = ROOT.parent / "shared" / "data" / "locomo"


@pytest.fixture(scope="session", autouse=True)
def synced_answers() -> Iterator[None]:
    """Requests wait for the index to reach HEAD, however long the sync: most tests check what
    an answer holds right after a write, not the notice an answer from an older index carries
    (tests/index/test_freshness.py sets short waits on its own knowledge bases)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KBMEM_INDEX__STALE_WAIT_S", "3600")
        patch.setenv("KBMEM_INDEX__FIRST_WAIT_S", "3600")
        yield


@pytest.fixture(scope="session")
def example_kb_master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example knowledge base, built and indexed once per test run (read-only: copy
    before writing). Its copies start with the index, as a knowledge base in use does: each
    test that searched one used to build the same index again (tests of building an index
    make their own knowledge bases)."""
    target = tmp_path_factory.mktemp("example") / "kb"
    kb = init_kb(target)
    for tenant in sorted(p.name for p in (target / "tenants").iterdir() if p.is_dir()):
        TenantIndex(kb, tenant).sync()
    return target


@pytest.fixture
def example_kb(example_kb_master: Path, tmp_path: Path) -> KnowledgeBase:
    """A private, writable copy of the example knowledge base (with its git history)."""
    target = tmp_path / "kb"
    shutil.copytree(example_kb_master, target, symlinks=True)
    return KnowledgeBase(target)


@pytest.fixture
def kb(example_kb: KnowledgeBase) -> KnowledgeBase:
    """A private, writable, indexed copy of the example knowledge base (a module may define
    its own ``kb``)."""
    return example_kb


@pytest.fixture
def empty_kb(tmp_path: Path) -> KnowledgeBase:
    """A new knowledge base with settings only."""
    return init_kb(tmp_path / "kb", with_history=False)


@pytest.fixture(scope="session")
def llm_server() -> Iterator[LocalLLMServer]:
    """A real llama.cpp server with SmolLM2-135M, shared by the whole run."""
    with LocalLLMServer() as server:
        yield server


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Markers that follow from what a test uses, so they cannot drift: ``llm`` for a test
    that starts the real llama.cpp server, ``locomo`` for one that reads the shared LoCoMo
    data. (``slow`` is set by hand on the modules that take minutes.)"""
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "llm_server" in names:
            item.add_marker(pytest.mark.llm)
        module = getattr(item, "module", None)
        if module is not None and "LOCOMO" in vars(module):
            item.add_marker(pytest.mark.locomo)
