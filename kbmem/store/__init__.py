"""The store: the knowledge base as one git repository.

Commits built from exactly the paths kbmem writes, HEAD moved by compare-and-swap, one writer
at a time under a lock in ``.kbmem/``, a journal that repairs a crash mid-write; pages (YAML
front matter + verbatim turns) and their reads at any revision, with history and diffs.

May import: the foundation modules (``kbmem.errors``, ``kbmem.ids``, ``kbmem.config``,
``kbmem.textutil``) only.
"""
