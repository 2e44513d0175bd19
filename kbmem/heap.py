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
nothing is changed."""

from __future__ import annotations

import ctypes
import os
import platform

M_MMAP_THRESHOLD = -3  # glibc's <malloc.h>
# glibc's own starting value: blocks this large are mapped, and unmapped when freed.
MMAP_THRESHOLD_BYTES = 128 * 1024
ENVIRONMENT_SETTING = "MALLOC_MMAP_THRESHOLD_"


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
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
