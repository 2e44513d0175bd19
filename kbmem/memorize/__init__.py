"""The memorizer (GAM's offline half): sessions as they arrive (validated), memos, and the
pages and ``MEMORY.md`` lines a session becomes; ``kbmem init``'s example history.

May import: the foundation modules and :mod:`kbmem.store`.
"""
