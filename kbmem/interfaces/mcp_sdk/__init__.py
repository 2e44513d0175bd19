"""kbmem as a Model Context Protocol server on the official ``mcp`` SDK: one set of tools,
resources and prompts (:mod:`.server`) over stdio (:mod:`.stdio`, ``kbmem mcp``) and over
Streamable HTTP (:mod:`.http`, mounted at ``/mcp`` on the HTTP API)."""
