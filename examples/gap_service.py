"""A jobs-only service whose idempotency middleware has a read-then-write gap (and, on request,
other flaws seen in real middlewares). It is here to be caught.

    python examples/gap_service.py --port 8802 --db /tmp/gap.db                # store-gap only
    python examples/gap_service.py --port 8802 --flaws store-gap,sticky-lock   # several

The middleware looks the key up in a response cache (a table); on a miss it takes an in-memory
"in progress" lock (a duplicate meanwhile gets ``409 request_in_progress``), runs the handler,
then stores the response (``--store-ms``: serialising it and writing it takes time) and answers
with whatever the cache holds (the first stored response wins). Without flaws that is correct.
Each flaw below is one small change in ``GapIdempotencyMiddleware.__call__``:

====================  ============================================================================
``store-gap``         (default) the lock is released *before* the response is stored: a duplicate
                      arriving while the first request stores its result reads a miss, finds no
                      lock, and runs the handler again. Every answer still names the first job:
                      only the side-effect count shows the second run.
``no-lock``           no lock at all: read, run, write. A simultaneous burst runs many times.
``inflight-only``     duplicates are merged only while the first is in flight; nothing is stored,
                      so a duplicate arriving after it finished runs again.
``conflict-losers``   a duplicate that arrives while the first runs gets ``409 {"error":
                      "conflict"}``: a refusal for a request that never ran (not the declared
                      "in progress" answer a client retries).
``sticky-lock``       the lock is released only after a success: after a handler failure the key
                      stays "in progress" forever and every retry is refused.
``mutated-fingerprint`` the stored fingerprint is taken *after* the handler filled defaults into
                      the body: a byte-identical retry is rejected as a different payload (422).
``raw-body-key``      the cache key includes a hash of the raw body: the same JSON re-serialised
                      (keys reordered, ``1.0`` for ``1``) is a cache miss and a new job — and
                      so is another body under a used key.
``no-fingerprint``    a stored response is replayed whatever the body: another body under a
                      used key silently gets the first job.
``cache-5xx``         a 500 is stored like any response and replayed as if it were final.
``no-replay-header``  replays carry no ``Idempotent-Replayed: true``.
====================  ============================================================================

``--hold-copies N`` makes a test independent of timing: the first request of a key runs its
handler only once N - 1 duplicates of it have been merged or refused while it waited (at most
``--hold-s``, default 30 s). A burst of N copies then surely meets the first one in flight, on
however loaded a machine; single requests wait the whole ``--hold-s``, so it is for bursts only.

Some flaws hide others, as they would in a real service: ``no-lock`` and ``inflight-only``
replace the lock (``inflight-only`` stores nothing, so no storage flaw can show);
``sticky-lock`` returns before a 500 could be cached (``cache-5xx``); ``mutated-fingerprint``
rejects the replays that ``no-replay-header`` would send without their header.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sqlite3
from dataclasses import dataclass, field

from jobs_app import (  # type: ignore[import-not-found]
    ASGIApp,
    Receive,
    Scope,
    Send,
    build_parser,
    call_app,
    fingerprint,
    jobs_app,
    open_db,
    owner_of,
    read_body,
    respond,
    serve,
    served,
)
from starlette.datastructures import Headers

FLAWS = ("store-gap", "no-lock", "inflight-only", "conflict-losers", "sticky-lock",
         "mutated-fingerprint", "raw-body-key", "cache-5xx", "no-replay-header", "no-fingerprint")
LOCK_FLAWS = ("store-gap", "no-lock", "inflight-only")  # at most one: they replace the lock
DEFAULT_FLAWS = ("store-gap",)

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    cache_key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, status INTEGER NOT NULL, body BLOB
);
"""

Answer = tuple[int, bytes, dict[str, str]]


@dataclass
class Hold:
    """A first request held by ``--hold-copies``: the duplicates that met it so far, and the
    event set once enough have."""

    met: int = 0
    all_met: asyncio.Event = field(default_factory=asyncio.Event)


def parse_flaws(text: str) -> frozenset[str]:
    flaws = {f.strip() for f in text.split(",") if f.strip() and f.strip() != "none"}
    unknown = sorted(flaws - set(FLAWS))
    if unknown:
        raise SystemExit(f"unknown flaw(s) {', '.join(unknown)}; choose from {', '.join(FLAWS)}")
    if len(flaws & set(LOCK_FLAWS)) > 1:
        raise SystemExit(f"choose at most one of {', '.join(LOCK_FLAWS)}")
    return frozenset(flaws)


class GapIdempotencyMiddleware:
    """A response-cache idempotency middleware with the chosen ``flaws``."""

    def __init__(self, app: ASGIApp, db: sqlite3.Connection, *,
                 flaws: frozenset[str] = frozenset(DEFAULT_FLAWS), store_ms: float = 10.0,
                 hold_copies: int = 0, hold_s: float = 30.0) -> None:
        self.app = app
        self.db = db
        self.hold_copies, self.hold_s = hold_copies, hold_s
        self.holds: dict[str, Hold] = {}  # the keys whose first request is held
        self.flaws = flaws
        self.store_ms = store_ms
        self.locks: set[str] = set()  # keys in progress (like a Redis SETNX without a TTL)
        self.in_flight: dict[str, asyncio.Future[Answer]] = {}
        db.executescript(SCHEMA)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/jobs":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        key = headers.get("idempotency-key")
        if not key:
            await respond(send, 400, {"error": "idempotency_key_missing"})
            return
        raw = await read_body(receive)
        try:
            body = json.loads(raw)
        except ValueError:
            await respond(send, 400, {"error": "invalid_json"})
            return
        cache_key = f"{owner_of(headers)}\x00{key}"
        if "raw-body-key" in self.flaws:
            cache_key += "\x00" + hashlib.sha256(raw).hexdigest()
        fp = fingerprint(body)

        # 1. read: a stored response is replayed
        cached = self._cached(cache_key)
        if cached is not None:
            stored_fp, status, content = cached
            if stored_fp != fp and "no-fingerprint" not in self.flaws:
                await respond(send, 422, {"error": "key_reused",
                                          "detail": "this key was used with another body"})
                return
            await respond(send, status, content, self._replay_headers())
            return

        # 2. the lock (or what replaces it)
        if "inflight-only" in self.flaws:
            waiting = self.in_flight.get(cache_key)
            if waiting is not None:
                self._meet(cache_key)  # before it waits: the first one is surely still in flight
                status, content, _ = await asyncio.shield(waiting)
                await respond(send, status, content, self._replay_headers())
                return
            self.in_flight[cache_key] = asyncio.get_running_loop().create_future()
        elif "no-lock" not in self.flaws:
            if cache_key in self.locks:
                self._meet(cache_key)
                refusal = ({"error": "conflict", "detail": "a request with this key exists"}
                           if "conflict-losers" in self.flaws
                           else {"error": "request_in_progress"})
                await respond(send, 409, refusal)
                return
            self.locks.add(cache_key)

        # 3. run the handler (with --hold-copies, once the other copies have met this one)
        if self.hold_copies > 1:
            await self._hold(cache_key)
        scope.setdefault("state", {})["json"] = body
        status, out_headers, content = await call_app(self.app, scope, raw)
        if "inflight-only" in self.flaws:
            self.in_flight.pop(cache_key).set_result((status, content, {}))
            await send({"type": "http.response.start", "status": status, "headers": out_headers})
            await send({"type": "http.response.body", "body": content})
            return  # nothing stored: only duplicates in flight were merged
        if status >= 500 and "sticky-lock" in self.flaws:
            await respond(send, status, content)
            return  # the lock is released only on the success path
        if "store-gap" in self.flaws:
            self.locks.discard(cache_key)  # released before the response is stored

        # 4. write: store the response (first write wins), answer with what is stored
        if status < 500 or "cache-5xx" in self.flaws:
            await asyncio.sleep(self.store_ms / 1000)  # serialise + write to the cache
            stored_fp = fingerprint(body) if "mutated-fingerprint" in self.flaws else fp
            self.db.execute("INSERT OR IGNORE INTO responses (cache_key, fingerprint, status, "
                            "body) VALUES (?, ?, ?, ?)", (cache_key, stored_fp, status, content))
            stored = self._cached(cache_key)
            if stored is not None:
                _, status, content = stored
        self.locks.discard(cache_key)
        await respond(send, status, content)

    def _meet(self, cache_key: str) -> None:
        """A duplicate met the first request of its key (merged or refused)."""
        hold = self.holds.get(cache_key)
        if hold is None:
            return  # no --hold-copies, or the first one was let go already
        hold.met += 1
        if hold.met >= self.hold_copies - 1:
            hold.all_met.set()

    async def _hold(self, cache_key: str) -> None:
        """Wait until the other copies met this first one (called with no await between its
        lock or in-flight entry and here, so no copy can meet it unseen)."""
        self.holds[cache_key] = hold = Hold()
        try:
            await asyncio.wait_for(hold.all_met.wait(), self.hold_s)
        except TimeoutError:
            print(f"--hold-copies: {hold.met} of {self.hold_copies - 1} copies met the first "
                  f"in {self.hold_s:g} s; its handler runs now", flush=True)
        finally:
            del self.holds[cache_key]

    def _cached(self, cache_key: str) -> tuple[str, int, bytes] | None:
        row = self.db.execute("SELECT fingerprint, status, body FROM responses "
                              "WHERE cache_key = ?", (cache_key,)).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def _replay_headers(self) -> dict[str, str]:
        return {} if "no-replay-header" in self.flaws else {"Idempotent-Replayed": "true"}


def build(args: argparse.Namespace) -> ASGIApp:
    db = open_db(args.db)
    app = jobs_app(db, work_ms=args.work_ms, fail_file=args.fail_file)
    layer = GapIdempotencyMiddleware(app, db, flaws=parse_flaws(args.flaws),
                                     store_ms=args.store_ms, hold_copies=args.hold_copies,
                                     hold_s=args.hold_s)
    return served(layer, report_ms=args.report_ms)


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--flaws", default=",".join(DEFAULT_FLAWS),
                        help=f"comma-separated, from: {', '.join(FLAWS)}; or 'none'")
    parser.add_argument("--store-ms", type=float, default=10.0,
                        help="how long storing a response takes (the width of the gap)")
    parser.add_argument("--hold-copies", type=int, default=0, metavar="N",
                        help="the first request of a key runs its handler only once N - 1 "
                        "duplicates met it in flight (a burst's copies, independent of timing)")
    parser.add_argument("--hold-s", type=float, default=30.0,
                        help="the longest --hold-copies waits (seconds)")


if __name__ == "__main__":
    serve(build, build_parser("A jobs-only service with a read-then-write gap in its "
                              "idempotency layer.", options))
