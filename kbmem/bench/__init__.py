"""Benchmarks: ``kbmem bench ingest|retrieval|scale|locomo|chat|tui``. Each prints its figures
(and JSON with ``--json``); targets live here, never in timed tests."""
