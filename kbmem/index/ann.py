"""The approximate-nearest-neighbour library of the dense side, imported here and nowhere else:
qhnswlib, a fork of hnswlib 0.8.0 that PyPI ships as wheels (hnswlib itself is source only, so
installing it needs a C++ compiler). It builds the same graph and reads hnswlib 0.8.0's files;
see docs/decisions/dependencies.md.

``ANN_BUILD`` names the library and release line that wrote a generation's graph (stored in its
meta): a graph written by another build is rebuilt rather than read, since builds compiled for
other instruction sets give distances that differ in the last float32 step, which can reorder
ties between what was indexed and what is searched."""

from __future__ import annotations

from importlib.metadata import version

from qhnswlib import Index

ANN_LIBRARY = "qhnswlib"
ANN_BUILD = f"{ANN_LIBRARY} {'.'.join(version(ANN_LIBRARY).split('.')[:2])}"

__all__ = ["ANN_BUILD", "Index"]
