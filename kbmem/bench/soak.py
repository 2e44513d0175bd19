"""``kbmem bench soak``: well-behaved clients under faults, against the same clients without.

A fresh copy of the example knowledge base is served by a real ``kbmem serve`` process on a
loopback port. Four well-behaved clients (ingest, chat, research, search) run for half of
``--minutes`` alone (the baseline), then for the other half while faults are injected:

- a user's commit in the knowledge base's work tree every few seconds, and ``git gc`` between;
- 64 slowloris connections, each sending a request a byte a second and reopening when dropped;
- a flood of maximum-size invalid bodies from a token holder;
- one session of ``--big-turns`` turns (20,000 by default);
- one ``kill -9`` of the server halfway through, and a restart.

Afterwards every acknowledged session and chat turn is looked up through the API. Reported:
requests by phase and status, p50/p95 of the well-behaved clients in each phase and their
ratio, the server's idle and peak RSS, sessions and turns lost, 5xx outside the kill window,
and searches for a just-stored word that missed it without saying the index was behind."""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbmem.bench.chat import questions
from kbmem.bench.stats import add_dir_argument, percentile
from kbmem.errors import ValidationError

SLOWLORIS = 64
# The attackers come from other loopback addresses than the well-behaved clients, as they
# would from other hosts: the server's per-client caps are what keep them apart.
SLOWLORIS_FROM, FLOOD_FROM = "127.0.0.2", "127.0.0.3"
FLOOD_BYTES = 8 * 1024 * 1024  # an invalid body well above any session the clients send
START_TIMEOUT = 180.0  # a cold server loads its model and index before it answers


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--minutes", type=float, default=4.0, help="whole run, half without faults (default 4)"
    )
    parser.add_argument(
        "--big-turns", type=int, default=20_000, help="turns of the one huge session (20000)"
    )
    add_dir_argument(parser)


@dataclass
class Ledger:
    """What the clients sent and what came back, shared by every thread."""

    phase: str = "warmup"
    statuses: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    latencies: dict[str, list[float]] = field(default_factory=dict)
    sessions: dict[str, str] = field(default_factory=dict)  # acknowledged id -> its marker
    turns: dict[str, int] = field(default_factory=dict)  # chat id -> acknowledged turns
    fivexx: list[tuple[float, str]] = field(default_factory=list)
    stale_silent: int = 0
    stale_noticed: int = 0
    fresh: int = 0
    kill_windows: list[tuple[float, float]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, who: str, status: str, seconds: float | None = None) -> None:
        with self.lock:
            self.statuses[(self.phase, who, status)] += 1
            if seconds is not None and status.startswith("2"):
                self.latencies.setdefault(self.phase, []).append(seconds)
            # The attackers' 503s are the server shedding them; a 5xx to a client that behaves
            # is a failure (the huge session behaves too: it is large, not hostile).
            if status.startswith("5") and who not in ("flood",):
                self.fivexx.append((time.monotonic(), who))


class Server:
    """One ``kbmem serve`` process, which the killer may replace."""

    def __init__(self, kb: Path, port: int) -> None:
        self.kb, self.port = kb, port
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = (kb.parent / "serve.log").open("ab")

    def start(self) -> None:
        env = dict(os.environ, HF_HUB_OFFLINE="1")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kbmem",
                "--kb",
                str(self.kb),
                "serve",
                "--quiet",
                "--port",
                str(self.port),
            ],
            stdout=self.log,
            stderr=self.log,
            env=env,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kbmem serve exited with {self.proc.returncode}")
            with contextlib.suppress(OSError, http.client.HTTPException):
                if request(self.port, "GET", "/v1/health", None, None, 2)[0] == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError("kbmem serve did not answer /v1/health in time")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()

    def rss_mb(self) -> float:
        try:
            pid = self.proc.pid if self.proc else 0
            text = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return 0.0
        for line in text.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0


def request(
    port: int,
    method: str,
    route: str,
    body: bytes | None,
    token: str | None,
    timeout: float = 300,
    source: str | None = None,
) -> tuple[int, Any]:
    address = (source, 0) if source else None
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=address)
    try:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        conn.request(method, route, body=body, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        try:
            data = json.loads(raw) if raw else None
        except ValueError:
            data = raw[:200]
        return response.status, data
    finally:
        conn.close()


def run(minutes: float = 4.0, big_turns: int = 20_000, dir: Path | None = None) -> dict[str, Any]:
    if minutes <= 0:
        raise ValidationError("must be more than 0", "--minutes")
    if big_turns < 1:
        raise ValidationError("must be at least 1", "--big-turns")
    with _folder(dir) as root:
        kb = root / "kb"
        _cli("init", str(kb))
        created = json.loads(_cli("--kb", str(kb), "token", "create", "--name", "soak", "--json"))
        token = created["token"]
        server = Server(kb, _free_port())
        server.start()
        try:
            return _soak(server, token, minutes * 60, big_turns)
        finally:
            server.stop()


def _soak(server: Server, token: str, seconds: float, big_turns: int) -> dict[str, Any]:
    ledger = Ledger()
    stop = threading.Event()
    port = server.port
    asked = questions()
    # Warm the model and index so that the idle figure is a ready server's.
    request(port, "POST", "/v1/research", _json({"request": asked[0]}), token)
    time.sleep(1)
    idle = server.rss_mb()
    peaks: dict[str, float] = {}

    def sampler() -> None:
        while not stop.is_set():
            rss = server.rss_mb()
            peaks[ledger.phase] = max(peaks.get(ledger.phase, 0.0), rss)
            time.sleep(0.25)

    clients = [_ingester, _searcher, _researcher, _chatter]
    workers = [_thread(sampler)]
    workers += [_thread(c, port, token, ledger, stop, asked) for c in clients]
    ledger.phase = "baseline"
    time.sleep(seconds / 2)
    faults = threading.Event()
    ledger.phase = "faults"
    injectors = [
        _thread(_user_commits, server.kb, faults),
        _thread(_big_session, port, token, ledger, big_turns),
        _thread(_flood, port, token, ledger, faults),
    ]
    injectors += [_thread(_slowloris, port, faults) for _ in range(SLOWLORIS)]
    time.sleep(seconds / 4)
    killed = time.monotonic()
    server.kill()
    server.start()
    ledger.kill_windows.append((killed, time.monotonic() + 5))
    time.sleep(seconds / 4)
    ledger.phase = "after"
    faults.set()
    stop.set()
    for t in workers + injectors:
        t.join(timeout=600)
    lost_sessions, lost_turns = _lost(port, token, ledger)
    return _report(ledger, idle, peaks, lost_sessions, lost_turns)


def _report(
    ledger: Ledger,
    idle: float,
    peaks: dict[str, float],
    lost_sessions: list[str],
    lost_turns: list[str],
) -> dict[str, Any]:
    by_status: dict[str, dict[str, int]] = {}
    for (phase, who, status), n in sorted(ledger.statuses.items()):
        by_status.setdefault(phase, {})[f"{who} {status}"] = n
    latency = {
        phase: {"p50_ms": percentile(v, 50) * 1000, "p95_ms": percentile(v, 95) * 1000}
        for phase, v in ledger.latencies.items()
        if v and phase in ("baseline", "faults")
    }
    base, hit = latency.get("baseline"), latency.get("faults")
    outside = [
        (at, who)
        for at, who in ledger.fivexx
        if not any(start <= at <= end for start, end in ledger.kill_windows)
    ]
    peak = max(peaks.get("faults", 0.0), peaks.get("baseline", 0.0))
    return {
        "requests": by_status,
        "well_behaved": latency,
        "p95_ratio": (hit["p95_ms"] / base["p95_ms"]) if base and hit and base["p95_ms"] else None,
        "rss_mb": {"idle": idle, "peak": peak, "ratio": peak / idle if idle else None},
        "sessions_lost": len(lost_sessions),
        "turns_lost": len(lost_turns),
        "lost": lost_sessions + lost_turns,  # which ones, to look them up
        "sessions_acknowledged": len(ledger.sessions),
        "turns_acknowledged": sum(ledger.turns.values()),
        "fivexx_outside_kill": len(outside),
        "fivexx_outside_kill_by_client": dict(Counter(who for _, who in outside)),
        "searches": {
            "fresh": ledger.fresh,
            "stale_with_notice": ledger.stale_noticed,
            "stale_without_notice": ledger.stale_silent,
        },
        "targets": {"p95_ratio_max": 2.0, "rss_ratio_max": 2.0},
    }


def render(result: dict[str, Any]) -> str:
    lines = ["kbmem bench soak"]
    for phase, figures in result["well_behaved"].items():
        lines.append(
            f"  {phase:9} well-behaved p50 {figures['p50_ms']:8.1f} ms  "
            f"p95 {figures['p95_ms']:8.1f} ms"
        )
    ratio = result["p95_ratio"]
    lines.append(f"  p95 with faults / without: {ratio:.2f}x (target <= 2)" if ratio else "")
    rss = result["rss_mb"]
    lines.append(
        f"  RSS idle {rss['idle']:.0f} MB, peak {rss['peak']:.0f} MB"
        + (f" ({rss['ratio']:.2f}x, target <= 2)" if rss["ratio"] else "")
    )
    lines.append(
        f"  lost: {result['sessions_lost']} of {result['sessions_acknowledged']} sessions, "
        f"{result['turns_lost']} of {result['turns_acknowledged']} turns"
    )
    lines.append(f"  5xx outside the kill window: {result['fivexx_outside_kill']}")
    s = result["searches"]
    lines.append(
        f"  searches: {s['fresh']} fresh, {s['stale_with_notice']} stale with notice, "
        f"{s['stale_without_notice']} stale without"
    )
    for phase, counts in result["requests"].items():
        lines.append(f"  {phase}: " + ", ".join(f"{k} x{n}" for k, n in counts.items()))
    return "\n".join(line for line in lines if line)


# -- well-behaved clients ---------------------------------------------------------------------


def _call(
    ledger: Ledger, who: str, port: int, method: str, route: str, body: Any, token: str
) -> tuple[int, Any]:
    started = time.monotonic()
    try:
        status, data = request(port, method, route, _json(body), token)
    except (OSError, http.client.HTTPException):
        ledger.count(who, "conn-error")
        time.sleep(0.5)  # the server is restarting; do not spin
        return 0, None
    ledger.count(who, str(status), time.monotonic() - started)
    return status, data


def _ingester(port: int, token: str, ledger: Ledger, stop: threading.Event, _q: list[str]) -> None:
    n = 0
    while not stop.is_set():
        n += 1
        marker = "zq" + uuid.uuid4().hex[:10]
        sid = f"soak-{ledger.phase}-{n}-{uuid.uuid4().hex[:6]}"
        session = _session(sid, 6, marker)
        status, _ = _call(ledger, "ingest", port, "POST", "/v1/sessions", session, token)
        if status in (200, 201):
            with ledger.lock:
                ledger.sessions[sid] = marker
        time.sleep(0.5)


def _searcher(port: int, token: str, ledger: Ledger, stop: threading.Event, _q: list[str]) -> None:
    while not stop.is_set():
        with ledger.lock:
            known = list(ledger.sessions.items())[-1:] if ledger.sessions else []
        if not known:
            time.sleep(0.5)
            continue
        sid, marker = known[0]
        body = {"query": marker, "tool": "bm25", "k": 5}
        status, data = _call(ledger, "search", port, "POST", "/v1/search", body, token)
        if status == 200 and isinstance(data, dict):
            found = any(_session_of(h) == sid for h in data.get("hits") or [])
            with ledger.lock:
                if found:
                    ledger.fresh += 1
                elif _says_behind(data):
                    ledger.stale_noticed += 1
                else:
                    ledger.stale_silent += 1
        time.sleep(0.3)


def _researcher(port: int, token: str, ledger: Ledger, stop: threading.Event, q: list[str]) -> None:
    n = 0
    while not stop.is_set():
        body = {"request": q[n % len(q)]}
        _call(ledger, "research", port, "POST", "/v1/research", body, token)
        n += 1


def _chatter(port: int, token: str, ledger: Ledger, stop: threading.Event, q: list[str]) -> None:
    n = 0
    while not stop.is_set():
        status, data = _call(ledger, "chat", port, "POST", "/v1/chats", {}, token)
        if status != 201 or not isinstance(data, dict):
            continue
        chat = str(data.get("chat_id") or data.get("chatId"))
        for _ in range(2):
            route = f"/v1/chats/{chat}/messages"
            message = {"message": q[n % len(q)]}
            status, _ = _call(ledger, "chat", port, "POST", route, message, token)
            n += 1
            if status == 200:
                with ledger.lock:
                    ledger.turns[chat] = ledger.turns.get(chat, 0) + 1
        _call(ledger, "chat", port, "DELETE", f"/v1/chats/{chat}", None, token)


# -- faults -----------------------------------------------------------------------------------


def _user_commits(kb: Path, done: threading.Event) -> None:
    n = 0
    while not done.wait(3):
        n += 1
        note = kb / "user-notes" / f"note-{n}.md"
        note.parent.mkdir(exist_ok=True)
        note.write_text(f"A note written by hand, number {n}.\n")
        _git(kb, "add", str(note.relative_to(kb)))
        _git(kb, "commit", "-q", "-m", f"A user's note {n}")
        if n % 2 == 0:
            _git(kb, "gc", "--quiet")


def _big_session(port: int, token: str, ledger: Ledger, turns: int) -> None:
    body = _session(f"soak-huge-{uuid.uuid4().hex[:6]}", turns, "zq" + uuid.uuid4().hex[:10])
    try:
        status, _ = request(port, "POST", "/v1/sessions", _json(body), token, timeout=3600)
    except (OSError, http.client.HTTPException):
        ledger.count("huge", "conn-error")
        return
    ledger.count("huge", str(status))


def _flood(port: int, token: str, ledger: Ledger, done: threading.Event) -> None:
    junk = b'{"turns": [' + b"x" * FLOOD_BYTES
    while not done.is_set():
        try:
            status, _ = request(port, "POST", "/v1/sessions", junk, token, 60, FLOOD_FROM)
            ledger.count("flood", str(status))
        except (OSError, http.client.HTTPException):
            ledger.count("flood", "dropped")
            time.sleep(0.2)


def _slowloris(port: int, done: threading.Event) -> None:
    head = b"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n"
    while not done.is_set():
        try:
            address = ("127.0.0.1", port)
            with socket.create_connection(address, 5, (SLOWLORIS_FROM, 0)) as sock:
                for byte in head + b"X" * 100000:
                    if done.is_set():
                        return
                    sock.sendall(bytes([byte]))
                    time.sleep(1)
        except OSError:
            time.sleep(1)


# -- after the run ----------------------------------------------------------------------------


def _lost(port: int, token: str, ledger: Ledger) -> tuple[list[str], list[str]]:
    stored: set[str] = set()
    offset: int | None = 0
    while offset is not None:
        status, data = request(port, "GET", f"/v1/pages?limit=1000&offset={offset}", None, token)
        if status != 200:
            raise RuntimeError(f"listing pages answered {status}: {data}")
        stored.update(_session_of(p) for p in data["pages"])
        offset = data.get("next_offset") or data.get("nextOffset")
    lost_sessions = [sid for sid in ledger.sessions if sid not in stored]
    lost_turns: list[str] = []
    for chat, acked in ledger.turns.items():
        status, data = request(port, "GET", f"/v1/turns?chat={chat}&limit=100", None, token)
        have = data.get("total", 0) if status == 200 and isinstance(data, dict) else 0
        lost_turns += [f"{chat} turn {n} (listing answered {status})" for n in range(have, acked)]
    return lost_sessions, lost_turns


def _session_of(item: dict[str, Any]) -> str:
    return str(item.get("sessionId") or item.get("session_id") or "")


def _says_behind(data: dict[str, Any]) -> bool:
    """Whether a search answer says its index does not yet hold every commit."""
    index = data.get("index")
    if not isinstance(index, dict):
        return False
    pending = index.get("pendingCommits", index.get("pending_commits", 0))
    return bool(pending) or bool(index.get("indexing"))


def _session(sid: str, turns: int, marker: str) -> dict[str, Any]:
    out = []
    for n in range(turns):
        text = f"Turn {n} of the soak run talks about the weather and the garden."
        if n == turns // 2:
            text = f"The code word for this session is {marker}."
        role = "user" if n % 2 == 0 else "assistant"
        out.append({"role": role, "content": text, "timestamp": "2026-11-26T10:00:00Z"})
    return {"sessionId": sid, "title": f"Soak {sid}", "turns": out}


def _json(body: Any) -> bytes | None:
    return None if body is None else json.dumps(body).encode()


def _thread(target: Callable[..., None], *args: Any) -> threading.Thread:
    t = threading.Thread(target=target, args=args, daemon=True)
    t.start()
    return t


def _git(kb: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(kb), *args], check=False, capture_output=True)


def _cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kbmem", *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"kbmem {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _folder(dir: Path | None) -> Iterator[Path]:
    if dir is not None:
        if dir.exists() and any(dir.iterdir()):
            raise ValidationError(f"{dir} is not empty", "--dir")
        dir.mkdir(parents=True, exist_ok=True)
        yield dir
        return
    with tempfile.TemporaryDirectory(prefix="kbmem-bench-soak-") as tmp:
        yield Path(tmp)
