"""Which tenants' indexes a process keeps open: the ``KBMEM_OPEN_INDEXES`` most recently used
(default OPEN_INDEXES). A service holds a ``TenantIndex`` for every tenant it has served, and an
open generation holds that tenant's postings view, vector delta, word-piece tables and caches;
the least recently used ones beyond the limit are released (their generation dropped, to be
opened again by the next search), so that memory grows with the tenants in use, not with
those that exist. The base vector graphs have their own small cache
(kbmem.index.vectors.shared_base)."""

from __future__ import annotations

import functools
import os
import threading
import weakref
from collections import OrderedDict
from typing import Protocol

OPEN_INDEXES = 8


class Releasable(Protocol):
    def release(self) -> None: ...


_open: OrderedDict[int, weakref.ref[Releasable]] = OrderedDict()
_lock = threading.Lock()
# The most recently used index (a weak reference, None when it changed or died): a search reads
# the current generation many times over (every hit it looks around), and each read of the
# index used last needs neither the lock nor a reordering.
_newest: weakref.ref[Releasable] | None = None


def open_limit() -> int:
    """``KBMEM_OPEN_INDEXES`` if it is a positive whole number, else OPEN_INDEXES."""
    value = os.environ.get("KBMEM_OPEN_INDEXES", "")
    return int(value) if value.strip().isdigit() and int(value) > 0 else OPEN_INDEXES


def touch(index: Releasable) -> None:
    """Note that ``index`` serves a read now, and release the least recently used indexes
    beyond the limit (outside the lock: a release takes the index's own lock)."""
    global _newest
    newest = _newest
    if newest is not None and newest() is index:
        return
    evicted: list[Releasable] = []
    with _lock:
        key = id(index)
        ref = _open.get(key)
        if ref is not None and ref() is index:
            _open.move_to_end(key)
        else:
            _open[key] = ref = weakref.ref(index, functools.partial(_forget, key))
        _newest = ref
        while len(_open) > open_limit():
            _key, oldest = _open.popitem(last=False)
            found = oldest()
            if found is not None:
                evicted.append(found)
    for found in evicted:
        found.release()


def forget(index: Releasable) -> None:
    """Stop counting ``index`` (it released its generation itself)."""
    global _newest
    with _lock:
        _newest = None
        ref = _open.get(id(index))
        if ref is not None and ref() is index:
            del _open[id(index)]


def _forget(key: int, ref: weakref.ref[Releasable]) -> None:
    with _lock:
        if _open.get(key) is ref:
            del _open[key]


def held() -> list[Releasable]:
    """The indexes open now, the least recently used first."""
    with _lock:
        found = [ref() for ref in _open.values()]
    return [index for index in found if index is not None]


def open_count() -> int:
    """How many indexes are open now."""
    with _lock:
        return len(_open)
