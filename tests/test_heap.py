"""A kbmem process gives large freed buffers back to the system (kbmem.heap): the pattern that
grew a chat server's RSS, run in a fresh interpreter with and without the kbmem command's
start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbmem.heap import ENVIRONMENT_SETTING, return_large_buffers

ROOT = Path(__file__).resolve().parents[1]

# Free one 8 MiB buffer (glibc then raises its mmap threshold to 8 MiB), then allocate 32
# buffers of 4 MiB with a small long-lived object after each, and free the buffers: printed is
# how many MB the process still holds for them.
PATTERN = """
import contextlib, io, sys
import numpy as np

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024

if sys.argv[1] == "kbmem":
    from kbmem.cli import main
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        main(["--help"])
first = np.ones(8 << 20, np.uint8)
del first
before = rss_mb()
buffers, kept = [], []
for n in range(32):
    buffers.append(np.ones(4 << 20, np.uint8))
    kept.append(b"x" * 2000 + bytes([n]))
del buffers
print(rss_mb() - before)
"""


def printed(pattern: str, mode: str) -> list[str]:
    """What ``pattern`` prints, run in a fresh interpreter (no malloc setting inherited)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", pattern, mode],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    return done.stdout.split()


def held_mb(mode: str) -> int:
    return int(printed(PATTERN, mode)[-1])


def test_the_kbmem_command_returns_freed_buffers_that_plain_python_keeps() -> None:
    # Plain Python keeps the 128 MB it freed (the control: the pattern does show the problem);
    # once the kbmem command has started, the same process keeps next to nothing.
    assert held_mb("plain") >= 64
    assert held_mb("kbmem") <= 16


def test_an_operators_own_setting_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENVIRONMENT_SETTING, "1048576")
    assert return_large_buffers() is False


# Bulk work (an index build's embedding) reuses large buffers from the arenas while it runs
# and gives them back when it ends: printed are whether the bulk setting was taken, the page
# faults of allocating 8 buffers of 4 MiB again inside the bulk block and again after it, and
# the MB the process still holds after it.
BULK_PATTERN = """
import contextlib, io, resource, sys
import numpy as np
from kbmem import heap

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024

def faults_of_churn():
    started = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    buffers = [np.ones(4 << 20, np.uint8) for _ in range(8)]
    del buffers
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - started

if sys.argv[1] == "kbmem":
    from kbmem.cli import main
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        main(["--help"])
before = rss_mb()
held = heap.hold_large_buffers()
faults_of_churn()
inside = faults_of_churn()
heap.release_large_buffers()
after = rss_mb() - before
print(held, inside, faults_of_churn(), after)
"""


def test_bulk_work_reuses_large_buffers_and_gives_them_back_when_it_ends() -> None:
    held, inside, outside, after = printed(BULK_PATTERN, "kbmem")
    assert held == "True"
    pages = 8 * (4 << 20) // 4096
    assert int(inside) < pages // 32  # the second batch reuses the first one's memory
    assert int(outside) >= pages // 4  # afterwards each buffer is mapped (and faulted) anew
    assert int(after) <= 16  # and what the bulk work freed is given back
    # Without the kbmem command's start-up (glibc's own dynamic threshold), nothing is set.
    assert printed(BULK_PATTERN, "plain")[0] == "False"


# Buffers below the mmap threshold come from the arenas: 400 of 100 KB straight from malloc
# (Python's own temporaries would fill the holes), a 16 KB block kept after each, then the
# buffers freed. Printed are the MB the process still holds for them, whether
# heap.give_back_free_memory ran (what a full index build calls at its end, when Whoosh's pool
# and the steps' buffers are freed) and the MB held after it.
HOLES_PATTERN = """
import contextlib, ctypes, io
from kbmem import heap

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024

from kbmem.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main(["--help"])
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
before = rss_mb()
buffers, kept = [], []
for n in range(400):
    buffers.append(libc.malloc(100_000))
    libc.memset(buffers[-1], 1, 100_000)
    kept.append(libc.malloc(16_000))
for buffer in buffers:
    libc.free(buffer)
held = rss_mb() - before
print(held, heap.give_back_free_memory(), rss_mb() - before)
"""


def test_memory_freed_between_live_blocks_is_given_back_on_request() -> None:
    held, ran, after = printed(HOLES_PATTERN, "kbmem")
    assert int(held) >= 24  # the holes stay with the process (the control)...
    assert ran == "True"
    assert int(after) <= 8  # ...until it asks malloc to give them back
