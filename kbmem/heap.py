"""How a kbmem process gives large freed buffers back to the system
(docs/decisions/malloc-mmap-threshold.md).

glibc's malloc serves a request of at least ``M_MMAP_THRESHOLD`` bytes (128 KiB to start)
with its own ``mmap``, unmapped again when freed; but each time such a block is freed, glibc
raises the threshold to that block's size (up to 32 MiB on 64-bit systems). After the first
batch of embeddings has freed its multi-megabyte activations, every later buffer of that size
(torch's activations, numpy's arrays, a request body) is carved out of the malloc arenas
instead, and the holes left between long-lived small objects are never given back: a server
answering chats grew from 365 to 845 MB in 40 seconds with nothing new to hold.

:func:`return_large_buffers` sets the threshold explicitly, which per mallopt(3) also turns the
dynamic adjustment off, so large buffers stay mapped only while they are used. An operator's
own ``MALLOC_MMAP_THRESHOLD_`` in the environment wins, and on a C library other than glibc
nothing is changed.

Bulk embedding (an index build, a large session) pays for that: every activation is mapped
afresh and faults its pages in again, a third of the forward pass's CPU time. While it runs,
:func:`hold_large_buffers` raises the threshold to glibc's largest, so activations are reused
from the arenas; :func:`release_large_buffers` sets it back and trims the arenas
(``malloc_trim``), giving back what the bulk work freed
(docs/decisions/malloc-mmap-threshold.md)."""

from __future__ import annotations

import ctypes
import os
import platform

M_TRIM_THRESHOLD = -1  # glibc's <malloc.h>
M_MMAP_THRESHOLD = -3
# glibc's own starting value: blocks this large are mapped, and unmapped when freed.
MMAP_THRESHOLD_BYTES = 128 * 1024
# The largest threshold glibc takes (its dynamic threshold's ceiling on 64-bit systems): held
# during bulk embedding, where activations are a few MiB to a few tens of MiB.
BULK_MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
# glibc's default trim threshold (free memory at the top of the heap beyond it is given back
# at once), and the one held during bulk work (twice the mmap threshold, as glibc's dynamic
# adjustment sets it), so that freed activations at the top stay for the next batch.
TRIM_THRESHOLD_BYTES = 128 * 1024
BULK_TRIM_THRESHOLD_BYTES = 2 * BULK_MMAP_THRESHOLD_BYTES
ENVIRONMENT_SETTING = "MALLOC_MMAP_THRESHOLD_"
_fixed = False  # whether this process fixed the threshold (return_large_buffers)


def return_large_buffers() -> bool:
    """Fix glibc's mmap threshold at :data:`MMAP_THRESHOLD_BYTES` for this process. Returns
    whether it was set (False on another C library, or when the environment already sets it)."""
    if os.environ.get(ENVIRONMENT_SETTING) is not None:
        return False
    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    global _fixed
    _fixed = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
    return _fixed


def _set_thresholds(mmap: int, trim: int) -> bool:
    libc = ctypes.CDLL(None)
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.mallopt.restype = ctypes.c_int
    return bool(libc.mallopt(M_TRIM_THRESHOLD, trim)) and bool(libc.mallopt(M_MMAP_THRESHOLD, mmap))


def hold_large_buffers() -> bool:
    """Keep freed buffers of up to :data:`BULK_MMAP_THRESHOLD_BYTES` in the arenas for reuse,
    while bulk work runs. Only where :func:`return_large_buffers` fixed the threshold (else
    glibc's own dynamic threshold is in force, or another C library). Returns whether it did;
    :func:`release_large_buffers` undoes it."""
    return _fixed and _set_thresholds(BULK_MMAP_THRESHOLD_BYTES, BULK_TRIM_THRESHOLD_BYTES)


def release_large_buffers() -> None:
    """After bulk work: large buffers are mapped again (:data:`MMAP_THRESHOLD_BYTES`) and the
    arenas' free memory is given back to the system."""
    if not _fixed:
        return
    _set_thresholds(MMAP_THRESHOLD_BYTES, TRIM_THRESHOLD_BYTES)
    give_back_free_memory()


def give_back_free_memory() -> bool:
    """Give the free memory inside malloc's arenas back to the system (``malloc_trim(0)``,
    which also releases free pages between blocks still in use, not only the top of the
    heap): after work that freed much between long-lived blocks, such as an index build.
    On glibc only; returns whether it ran."""
    if platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(None)
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    libc.malloc_trim.restype = ctypes.c_int
    libc.malloc_trim(0)
    return True
