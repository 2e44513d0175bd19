"""The shape of JSON answers, for tests of the HTTP API and MCP alike."""

from __future__ import annotations

import re
from typing import Any

CAMEL_CASE = re.compile(r"[a-z]+(?:[A-Z][a-z0-9]*)*")


def keys_of(value: Any) -> set[str]:
    """The keys of every object in ``value``, however deeply nested."""
    if isinstance(value, dict):
        return set(value).union(*map(keys_of, value.values()))
    if isinstance(value, list):
        return set().union(*map(keys_of, value))
    return set()
