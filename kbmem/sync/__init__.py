"""Sync through a git remote: fetch, integrate, push (see docs/sync.md).

``engine`` holds the remote and one sync; ``merge`` joins two histories by kbmem's
deterministic rules; ``background`` runs syncs after commits and reports their health. The
package sits above ``memorize`` (a merge rebuilds ``MEMORY.md`` as the memorizer writes it).
"""
