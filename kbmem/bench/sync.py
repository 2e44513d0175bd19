"""``kbmem bench sync``: N replicas over a loopback git server ingest LoCoMo sessions at once.

Reported: replication lag (a session committed on one replica until it is searchable on the
next one: synced and indexed there), p50 and p95; sessions/s with background sync on against
off in the same run (fresh replicas each, the same sessions); and bytes the remote grew by per
session (what a sync moves, packed as git packs it)."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kbmem.bench.locomo import locomo_sessions
from kbmem.bench.stats import percentile, tree_bytes
from kbmem.errors import ValidationError
from kbmem.index.tenant import TenantIndex
from kbmem.memorize.memorizer import ingest_session
from kbmem.memorize.sessions import Session
from kbmem.memorize.template import init_kb
from kbmem.store.repository import KnowledgeBase
from kbmem.store.transaction import GIT
from kbmem.sync.background import BackgroundSync
from kbmem.sync.engine import add_remote, sync


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--replicas", type=int, default=3, help="replicas (2..8, default 3)")
    parser.add_argument("--sessions", type=int, default=24, help="sessions to ingest (all: 0)")
    parser.add_argument("--interval", type=float, default=2.0, help="sync interval in seconds")
    parser.add_argument("--probes", type=int, default=8, help="sessions timed for the lag")


class _Server:
    """``git daemon`` on 127.0.0.1 serving one bare repository, for the run only."""

    def __init__(self, base: Path):
        self.base = base
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.url = f"git://127.0.0.1:{self.port}/memory.git"
        bare = base / "memory.git"
        subprocess.run([GIT, "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
        self.proc = subprocess.Popen(
            [
                GIT,
                "daemon",
                "--reuseaddr",
                "--enable=receive-pack",
                "--export-all",
                f"--base-path={base}",
                "--listen=127.0.0.1",
                f"--port={self.port}",
                str(base),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 20
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    break
            if time.monotonic() > deadline:
                self.stop()
                raise ValidationError("git daemon did not start on 127.0.0.1", "bench sync")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def _replicas(root: Path, server: _Server, n: int) -> list[KnowledgeBase]:
    first = init_kb(root / "r0", with_history=False)
    first.commit_files({"README.md": b"# A memory on many machines\n"}, "Start")
    add_remote(first, server.url)
    sync(first)
    kbs = [first]
    for i in range(1, n):
        subprocess.run(
            [GIT, "clone", "-q", server.url, str(root / f"r{i}")],
            check=True,
            stdin=subprocess.DEVNULL,
            capture_output=True,
        )
        kbs.append(KnowledgeBase(root / f"r{i}"))
    return kbs


def _ingest_all(
    kbs: list[KnowledgeBase], shares: list[list[Session]], done: dict[str, float]
) -> float:
    """Every replica ingests its share at once; seconds until the last one finished."""

    def work(kb: KnowledgeBase, share: list[Session]) -> None:
        for session in share:
            ingest_session(kb, session)
            done[f"{session.tenant_id}/{session.session_id}"] = time.monotonic()

    threads = [threading.Thread(target=work, args=pair) for pair in zip(kbs, shares, strict=True)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started


def _lag(
    source: KnowledgeBase, target: TenantIndex, session: Session, limit: float
) -> tuple[float, float]:
    """Seconds from ``session``'s commit on ``source`` until the replica of ``target`` has
    it (synced), and until it is searchable there (indexed); ``limit`` bounds the wait."""
    ingest_session(source, session)
    committed = time.monotonic()
    record = f"tenants/{session.tenant_id}/sessions/{session.session_id}.yaml"
    while time.monotonic() - committed < limit:
        if target.kb.blob_id(record) is not None:
            synced = time.monotonic() - committed
            target.sync()
            return synced, time.monotonic() - committed
        time.sleep(0.02)
    raise ValidationError(f"a session took over {limit:g} s to reach another replica", "sync")


def _throughput_without_sync(base: Path, replicas: int, shares: list[list[Session]]) -> float:
    """Seconds for the replicas to ingest their shares with no sync running."""
    (base / "off").mkdir()
    server = _Server(base / "off")
    try:
        return _ingest_all(_replicas(base / "off", server, replicas), shares, {})
    finally:
        server.stop()


@dataclass
class _SyncedRun:
    seconds: float
    lags: list[tuple[float, float]]
    remote_bytes: int
    syncs: int
    settle_seconds: float


def _run_with_sync(
    base: Path,
    replicas: int,
    chosen: list[Session],
    shares: list[list[Session]],
    interval: float,
    probes: int,
) -> _SyncedRun:
    """Ingest the shares with background sync on, then probe the replication lag."""
    (base / "on").mkdir()
    server = _Server(base / "on")
    try:
        kbs = _replicas(base / "on", server, replicas)
        remote_before = tree_bytes(base / "on" / "memory.git")
        # Each replica keeps its indexes open, as a serving replica does.
        tenants = {x.tenant_id for x in chosen}
        indexes = {(i, t): TenantIndex(kb, t) for i, kb in enumerate(kbs) for t in tenants}
        for index in indexes.values():
            index.sync()
        # A serving replica brings its open indexes up to the commits a sync pulls in.
        workers = [
            BackgroundSync(
                kb,
                interval=interval,
                on_pull=_indexer([ix for (r, _t), ix in indexes.items() if r == i]),
            )
            for i, kb in enumerate(kbs)
        ]
        for w in workers:
            w.start()
        # Replicas that have been running a while, not ones making their first sync.
        for w in workers:
            w.first_sync.wait(60)
        try:
            seconds = _ingest_all(kbs, shares, {})
            # The burst's backlog drains (every replica synced and indexed) before the lag is
            # probed: a probe measures one session's way, not the queue ahead of it.
            settle = _settle(kbs, list(indexes.values()), 300)
            lags = []
            for k in range(probes):
                probe = replace(chosen[k % len(chosen)], session_id=f"lag-probe-{k}")
                target = indexes[((k + 1) % replicas, probe.tenant_id)]
                lags.append(_lag(kbs[k % replicas], target, probe, 120))
        finally:
            for w in workers:
                w.stop()
        remote_bytes = tree_bytes(base / "on" / "memory.git") - remote_before
        return _SyncedRun(seconds, lags, remote_bytes, sum(w.syncs for w in workers), settle)
    finally:
        server.stop()


def _settle(kbs: list[KnowledgeBase], indexes: list[TenantIndex], limit: float) -> float:
    """Seconds until every replica holds the same HEAD (by background sync alone) and every
    index reflects it."""
    started = time.monotonic()
    while len({kb.head() for kb in kbs}) > 1:
        if time.monotonic() - started > limit:
            raise ValidationError(f"the replicas did not converge within {limit:g} s", "sync")
        time.sleep(0.05)
    for index in indexes:
        index.sync()
    return time.monotonic() - started


def _indexer(indexes: list[TenantIndex]) -> Callable[[], None]:
    def catch_up() -> None:
        for index in indexes:
            index.sync()

    return catch_up


def _p(values: list[float], q: int) -> float | None:
    return round(percentile(values, q), 1) if values else None


def run(
    data_dir: Path, replicas: int = 3, sessions: int = 24, interval: float = 2.0, probes: int = 8
) -> dict[str, Any]:
    if not 2 <= replicas <= 8:
        raise ValidationError("must be from 2 to 8", "--replicas")
    if sessions < 0 or interval <= 0 or probes < 1:
        raise ValidationError("must be 0 or more, and the interval more than 0", "--sessions")
    chosen = locomo_sessions(data_dir)
    chosen = chosen[:sessions] if sessions else chosen
    shares = [chosen[i::replicas] for i in range(replicas)]
    base = Path(tempfile.mkdtemp(prefix="kbmem-bench-sync-"))
    load_start = os.getloadavg()[0]
    try:
        seconds_off = _throughput_without_sync(base, replicas, shares)
        on = _run_with_sync(base, replicas, chosen, shares, interval, probes)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    n = len(chosen)
    synced_ms = [a * 1000 for a, _b in on.lags]
    lags_ms = [b * 1000 for _a, b in on.lags]
    return {
        "replicas": replicas,
        "sessions": n,
        "interval_s": interval,
        "lag_ms_p50": _p(lags_ms, 50),
        "lag_ms_p95": _p(lags_ms, 95),
        "lag_samples": len(lags_ms),
        # The same, until the session is on the other replica's HEAD (before indexing).
        "synced_ms_p50": _p(synced_ms, 50),
        "synced_ms_p95": _p(synced_ms, 95),
        "sessions_per_s_sync_off": round(n / seconds_off, 2),
        "sessions_per_s_sync_on": round(n / on.seconds, 2),
        "throughput_ratio": round(seconds_off / on.seconds, 3),
        "remote_bytes_per_session": round(on.remote_bytes / (n + probes)),
        "syncs": on.syncs,
        # After the burst: until every replica held every session, synced and indexed.
        "settle_s": round(on.settle_seconds, 1),
        "targets": {"lag_p50_ms_max": (interval + 2) * 1000, "throughput_ratio_min": 0.8},
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_1m_start": round(load_start, 2),
            "load_avg_1m_end": round(os.getloadavg()[0], 2),
        },
    }


def render(result: dict[str, Any]) -> str:
    return "\n".join(f"{key:>26}: {value}" for key, value in result.items())
