"""The researcher (GAM's online half): the tenant-scoped retrieval toolkit (bm25, dense,
hybrid, page, neighbors, expand) and the plan → search → integrate → reflect loop, with an
offline and an LLM engine, that returns a cited briefing.

May import: the foundation modules, :mod:`kbmem.store`, :mod:`kbmem.memorize` and
:mod:`kbmem.index`.
"""
