"""kbmem: a git-backed, auditable memory for AI agents (GAM: a memorizer and a researcher).

The core is headless: nothing under ``kbmem`` imports Textual (the terminal UI lives in the
``kbmem_tui`` package, the repository's ``tui/`` folder). Its packages are layers, each of
which may import only the ones before it (``tests/test_architecture.py`` enforces this)::

    errors, ids, config, textutil, dates, llm   the foundation every layer may use
    store       the git repository: commits, locks, pages, page reads at any revision
    memorize    sessions become pages and memos (the memorizer)
    sync        one memory on many machines: fetch, join by rule, push (docs/sync.md)
    index       intervals, BM25 and dense indexes derived from commits
    research    the researcher: plan, search, integrate, reflect; briefings
    agent       the chat agent, its tools, journal, batch commits and provenance
    interfaces  the service layer, HTTP API, MCP server and API tokens
    bench       benchmarks (``kbmem bench ...``)
    cli         the ``kbmem`` command
"""
