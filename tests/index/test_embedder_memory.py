"""The embedder's memory does not grow with the number of batch shapes it has read: the
products oneDNN and ideep compile for each shape are kept for a bounded number of shapes
(kbmem.index.embedder.COMPILED_SHAPES_KEPT). Run in fresh interpreters, since both libraries
read their setting once, at their first product."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kbmem.index.embedder import COMPILED_SHAPES_SETTINGS

ROOT = Path(__file__).resolve().parents[2]

# Embeds 120 texts one at a time, each of a different length (a shape of its own): printed are
# the MB of malloc's memory in use that the process gained (glibc's mallinfo2).
SHAPES = """
import ctypes
from kbmem.index import embedder

class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks",
                "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = Mallinfo2
embedder.embed(["warm up"])
before = mallinfo2().uordblks
for n in range(1, 121):
    embedder.embed([" ".join(["word"] * n)])
print((mallinfo2().uordblks - before) >> 20)
"""


def gained_mb(settings: dict[str, str]) -> int:
    env = {k: v for k, v in os.environ.items() if k not in COMPILED_SHAPES_SETTINGS}
    env.update(settings, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", SHAPES],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=300,
    )
    return int(done.stdout.split()[-1])


def test_the_memory_of_compiled_products_stays_bounded_over_many_shapes() -> None:
    # With the libraries' own capacity (1,024 shapes, what an operator's setting would also
    # give: it wins over kbmem's) every shape's products stay: about 2 MB each (the control).
    assert gained_mb({name: "1024" for name in COMPILED_SHAPES_SETTINGS}) >= 150
    # kbmem's own setting keeps a bounded number of them (about 50 MB measured).
    assert gained_mb({}) <= 80
