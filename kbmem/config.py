"""Knowledge-base settings: ``kbmem.yaml`` at the top of the knowledge base, with ``KBMEM_``
environment overrides (``KBMEM_MODEL``, ``KBMEM_API_BASE``, and ``KBMEM_<SECTION>__<KEY>`` for
any other setting, e.g. ``KBMEM_RESEARCH__MAX_PAGES=12``)."""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kbmem.errors import ValidationError

# The longest request or chat message taken (the CLI, the API, MCP and the TUI refuse longer).
MAX_REQUEST_CHARS = 20_000

DEFAULTS: dict[str, Any] = {
    "default_tenant": "default",
    "memorizer": {
        "memo_engine": "offline",
        "page_tokens": 2048,
        "memo_sentences": 3,
        "max_session_bytes": 64 * 1024 * 1024,
    },
    "research": {
        "engine": "offline",
        "max_pages": 8,
        "max_reflection_depth": 2,
        "max_output_tokens": 1500,
        "k": 10,
        # Seconds one research may take before it answers with what it has (a request may ask
        # for less, or for more up to HARD_CAPS).
        "time_budget_s": 60,
    },
    # How long a request waits for the index to catch up with HEAD before it answers from the
    # older index with a notice (stale), or, with no index at all, fails saying how far the
    # first build has got (first); see docs/architecture.md, "Index freshness".
    "index": {"stale_wait_s": 2, "first_wait_s": 120},
    "chat": {"batch_turns": 5},
    "llm": {
        "model": None,
        "api_base": None,
        "timeout_s": 60,
        "retries": 2,
        "max_prompt_tokens": 6000,
    },
    "git": {"lock_timeout_s": 60},
    # Sync through a git remote (see docs/sync.md); the remote's URL lives in git's own config.
    "sync": {"remote": "origin", "branch": "main", "interval_s": 30, "enabled": True},
    # The Summit routes' rollout flag (MEMORY_GAM_ENABLED in the environment wins).
    "server": {"memory_gam_enabled": False},
}

# A remote or branch name kbmem passes to git: never an option, a path or a refspec.
_GIT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")

HARD_CAPS = {"max_pages": 32, "max_reflection_depth": 5, "time_budget_s": 600}


def _merge(base: dict[str, Any], extra: Mapping[str, Any], where: str) -> None:
    for key, value in extra.items():
        if key not in base:
            raise ValidationError(f"unknown setting {key!r}", f"{where}{key}")
        if isinstance(base[key], dict):
            if not isinstance(value, Mapping):
                raise ValidationError("must be a mapping", f"{where}{key}")
            _merge(base[key], value, f"{where}{key}.")
        else:
            base[key] = value


def _coerce(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


@dataclass
class Settings:
    """Validated settings; ``data`` mirrors the YAML file's nesting."""

    data: dict[str, Any] = field(default_factory=lambda: copy.deepcopy(DEFAULTS))

    def section(self, name: str) -> dict[str, Any]:
        section: dict[str, Any] = self.data[name]
        return section

    @property
    def page_tokens(self) -> int:
        return int(self.data["memorizer"]["page_tokens"])

    @property
    def batch_turns(self) -> int:
        return int(self.data["chat"]["batch_turns"])

    @property
    def model(self) -> str | None:
        model: str | None = self.data["llm"]["model"]
        return model


def load_settings(kb_root: Path, environ: Mapping[str, str] | None = None) -> Settings:
    """Read ``kbmem.yaml`` (missing file = defaults) and apply environment overrides."""
    environ = os.environ if environ is None else environ
    settings = Settings()
    path = kb_root / "kbmem.yaml"
    if path.exists():
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise ValidationError(f"malformed YAML: {exc}", "kbmem.yaml") from exc
        if not isinstance(loaded, Mapping):
            raise ValidationError("must be a mapping", "kbmem.yaml")
        _merge(settings.data, loaded, "")
    if environ.get("KBMEM_MODEL"):
        settings.data["llm"]["model"] = environ["KBMEM_MODEL"]
    if environ.get("KBMEM_API_BASE"):
        settings.data["llm"]["api_base"] = environ["KBMEM_API_BASE"]
    for name, value in environ.items():
        if name.startswith("KBMEM_") and "__" in name:
            section, _, key = name[len("KBMEM_") :].lower().partition("__")
            _merge(settings.data, {section: {key: _coerce(value)}}, "KBMEM_")
    _validate(settings)
    return settings


def _positive_int(data: dict[str, Any], section: str, key: str) -> None:
    value = data[section][key]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValidationError(f"must be a positive integer, got {value!r}", f"{section}.{key}")


def _seconds(data: dict[str, Any], section: str, key: str, zero: bool) -> None:
    """A finite number of seconds: more than 0, or 0 or more when ``zero`` is allowed."""
    value = data[section][key]
    number = not isinstance(value, bool) and isinstance(value, int | float)
    if not number or not (value >= 0 if zero else value > 0) or not value < 1e9:
        wanted = "0 or more" if zero else "more than 0"
        raise ValidationError(
            f"must be a number of seconds, {wanted}; got {value!r}", f"{section}.{key}"
        )


def _validate(settings: Settings) -> None:
    d = settings.data
    _seconds(d, "git", "lock_timeout_s", zero=True)  # 0: never wait for another writer
    _seconds(d, "llm", "timeout_s", zero=False)
    _seconds(d, "research", "time_budget_s", zero=False)
    _seconds(d, "index", "stale_wait_s", zero=True)  # 0: never wait, answer at once
    _seconds(d, "index", "first_wait_s", zero=True)
    for section, key in [
        ("memorizer", "page_tokens"),
        ("memorizer", "memo_sentences"),
        ("memorizer", "max_session_bytes"),
        ("research", "max_pages"),
        ("research", "max_reflection_depth"),
        ("research", "max_output_tokens"),
        ("research", "k"),
        ("chat", "batch_turns"),
        ("llm", "retries"),
        ("llm", "max_prompt_tokens"),
    ]:
        if not (section == "llm" and key == "retries" and d[section][key] == 0):
            _positive_int(d, section, key)
    _validate_sync(d["sync"])
    for section, key in [("memorizer", "memo_engine"), ("research", "engine")]:
        if d[section][key] not in ("offline", "llm"):
            raise ValidationError("must be 'offline' or 'llm'", f"{section}.{key}")
    for key, cap in HARD_CAPS.items():
        if d["research"][key] > cap:
            raise ValidationError(f"at most {cap}", f"research.{key}")


def _validate_sync(sync: dict[str, Any]) -> None:
    """The ``sync:`` section: a remote name and branch git takes, an interval, on or off."""
    if not isinstance(sync["remote"], str) or not _GIT_NAME.fullmatch(sync["remote"]):
        raise ValidationError(
            f"must be a git remote name (letters, digits, '.', '_', '-'), got {sync['remote']!r}",
            "sync.remote",
        )
    branch = sync["branch"]
    if branch is not None and (not isinstance(branch, str) or not _GIT_NAME.fullmatch(branch)):
        raise ValidationError(
            f"must be a branch name (letters, digits, '.', '_', '-') or null, got {branch!r}",
            "sync.branch",
        )
    _seconds({"sync": sync}, "sync", "interval_s", zero=False)
    if not isinstance(sync["enabled"], bool):
        raise ValidationError(f"must be true or false, got {sync['enabled']!r}", "sync.enabled")
