"""The indexes, derived from commits and never the source of truth: intervals (the unit of
retrieval), text analysis, the BM25 side (Whoosh postings), the dense side (hnswlib vectors of
the bundled embedding model), late-interaction word pieces, and the per-tenant generations that
a sync builds beside the live one and swaps in.

May import: the foundation modules, :mod:`kbmem.store` and :mod:`kbmem.memorize`.
"""
