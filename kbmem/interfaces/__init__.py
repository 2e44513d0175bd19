"""How other programs reach one tenant's memory: the service layer (operations with
JSON-ready results), the HTTP API, the MCP server and the API tokens that decide the tenant.

May import: every core layer below it (store, memorize, index, research, agent); never the
CLI, the benchmarks or the terminal UI.
"""
