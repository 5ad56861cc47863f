"""Fake providers that stand behind a gateway: they keep what they received and what it cost.

:class:`RecordingFake` is a :class:`~harness.providers.fake.FakeProvider` (same wire formats,
same answers) that also records, per request, the body it received, its headers (credentials
masked), when it arrived and how it ended — and whose behaviour can be re-scripted while it runs
(a drill changes it between drills). It answers streamed requests too (``stream: true``), and
has one behaviour of its own, ``stream-cut``: the first bytes of a stream, then the connection
is closed.

How a request ended, and whether the provider would bill it: :mod:`harness.providers.received`.

Per-intent scripting: :meth:`RecordingFake.script_tag` gives the requests carrying one tag their
own behaviour (many intents drilled at once, each with its own script); the others get the
fake's ``script``. ``signed=True`` makes every answer say whose it is (:func:`signature`): the
text ``answered by <name> (call <name>#<seq>) for <tag>``, so a drill can tell which provider call
a job's result came from. ``epoch`` (a ``time.monotonic()`` value) lets several fakes share one
clock with the drill that watches them.

Held answers (:mod:`harness.providers.holds`): ``script_tag(tag, behaviour, hold=True)`` makes
the answers of the requests carrying ``tag`` wait, without busy waiting, until the drill calls
:meth:`RecordingFake.let_go` (or :meth:`RecordingFake.release`), or the hold's backstop passed:
the drill decides when each answer is delivered, as a deterministic simulation does, instead of
relying on timing. Each record says how its hold ended (``freed``) and when (``freed_at``).

Control endpoints (besides FakeProvider's): ``GET /_fake/received`` (the records as JSON),
``POST /_fake/script`` (``{"behaviour": "hang"}``, optionally ``"tag": "drill-…"``),
``POST /_fake/reset``. The control plane is not the data plane: ``control=False`` (the drill,
which scripts its fakes in process) serves none of them, so nothing a provider caller sends can
change a script, a log or a verdict; ``token=…`` (``fake-provider``, which prints its token)
answers them only to a request carrying the header ``x-fake-control-token`` with that token.

Each record keeps at most the first :data:`BODY_LIMIT` bytes of a request body (64 KiB: a
prompt over it is kept as ``{"prefix": …, "bytes": <size>}``), so a flood of huge prompts costs
no memory beyond the limit per call.
"""

from __future__ import annotations

import contextvars
import hmac
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.providers.behaviours import Behaviour, BehaviourError
from harness.providers.fake import (
    BEHAVIOUR_HEADER,
    ON_DROP,
    ON_REFUSE,
    FakeProvider,
    _drop,
    _read_body,
    _send_json,
    note_refusal,
)
from harness.providers.fake_answers import AnswerFn
from harness.providers.fake_wire import CallInput, Content, WireError
from harness.providers.holds import AfterAnswer, HeldAnswers, wait_or_leave
from harness.providers.prompts import prompt_key
from harness.providers.received import Received, signature
from harness.providers.secrets import redact_headers
from harness.providers.sse import sse_events

STREAM_CUT = "stream-cut"
TAG = re.compile(r"drill-[0-9a-f]{12}")  # how a drill names its requests inside the prompt
_TAG_BYTES = re.compile(rb"drill-[0-9a-f]{12}")
BODY_LIMIT = 64 * 1024  # bytes of a request body a record keeps (docs/drill.md, docs/security.md)
CONTROL_HEADER = "x-fake-control-token"
TOKEN_ENV = "FAILOVER_FAKE_TOKEN"  # fake-provider's token when set (certify sends it from there)
CONTROL_PATHS = ("/_fake/received", "/_fake/script", "/_fake/reset")
_CURRENT: contextvars.ContextVar[Received | None] = contextvars.ContextVar("recording_call",
                                                                          default=None)


@dataclass
class _Log:
    records: list[Received] = field(default_factory=list)
    by_tag: dict[str | None, list[Received]] = field(default_factory=dict)  # None: untagged
    lock: threading.Condition = field(default_factory=threading.Condition)


class RecordingFake(FakeProvider):
    """A FakeProvider that records what it received and how each request ended (see module)."""

    def __init__(self, kind: str, behaviour: str = "conformant", answer: AnswerFn | None = None,
                 *, name: str = "", answers_from: str | None = None, signed: bool = False,
                 epoch: float | None = None, control: bool = True,
                 token: str | None = None, after_answer: AfterAnswer | None = None) -> None:
        super().__init__(kind, "conformant", answer, answers_from=answers_from)
        self.name = name or kind
        self.control, self.token = control, token
        self._holds = HeldAnswers()
        #: the calls after an answer, shared by the fakes of one drill (holds.AfterAnswer)
        self.after_answer = after_answer or AfterAnswer()
        self.script = _check(behaviour)
        self.signed = signed
        self._tags: dict[str, str] = {}
        #: called with a request's tag when it arrives or ends (a drill wakes its watcher)
        self.on_change: Callable[[str | None], None] | None = None
        self._log = _Log()
        self._started = time.monotonic() if epoch is None else epoch

    # -- what the drill and the audit read --------------------------------------------------
    def set_behaviour(self, behaviour: str) -> None:
        self.script = _check(behaviour)

    def script_tag(self, tag: str, behaviour: str, *, hold: bool = False,
                   hold_max_s: float | None = None, look_max_s: float | None = None) -> None:
        """The behaviour of every request carrying ``tag`` (the others keep ``script``);
        ``hold``: their answers wait until :meth:`let_go` (or :meth:`release`), or at most
        ``hold_max_s`` after the request arrived. ``look_max_s``: the answers of ``tag`` go one
        at a time, each after the first once a look at the job began and ended since the one
        before (``after_answer``), at most that long after the request arrived."""
        checked = _check(behaviour)
        if hold:  # before the script: a call that gets the script finds its gate
            self._holds.hold(tag, hold_max_s)
        if look_max_s is not None:
            self.after_answer.arm(tag, look_max_s)
        with self._log.lock:
            self._tags[tag] = checked

    def let_go(self, tag: str) -> None:
        """Deliver the held answers of ``tag``, now and later (no-op when none is held)."""
        self._holds.let_go(tag)

    def holding(self, tag: str) -> bool:
        """Whether the answers of ``tag`` are still held."""
        return self._holds.holding(tag)

    def release(self, tag: str) -> None:
        """Close the hung requests carrying ``tag`` (outcome ``released``) and deliver its held
        answers, now and later: a drill that stops waiting for an intent does not leave its
        connections open."""
        self._holds.release(tag)
        self.after_answer.let_go(tag)

    def forget(self, tag: str) -> None:
        """Drop ``tag``'s script and gate (its intent is closed; its records stay)."""
        with self._log.lock:
            self._tags.pop(tag, None)
        self._holds.forget(tag)
        self.after_answer.forget(tag)

    def now(self) -> float:
        """Seconds on this fake's clock (the one ``at`` and ``ended_at`` are measured on)."""
        return time.monotonic() - self._started

    def received(self) -> list[Received]:
        with self._log.lock:
            return list(self._log.records)

    def received_tag(self, tag: str | None) -> list[Received]:
        """The requests carrying ``tag`` (None: no tag; an index: a drill looks often)."""
        with self._log.lock:
            return list(self._log.by_tag.get(tag, ()))

    def clear(self) -> None:
        with self._log.lock:
            self._log.records.clear()
            self._log.by_tag.clear()
            self._tags.clear()
        self._holds.clear()
        self.after_answer.clear()
        self.deliveries.clear()

    def wait_arrival(self, tag: str, timeout_s: float, count: int = 1) -> bool:
        """Block until ``count`` requests carrying ``tag`` arrived (True), or ``timeout_s``
        passed."""
        with self._log.lock:
            return self._log.lock.wait_for(
                lambda: len(self._log.by_tag.get(tag, ())) >= count, timeout_s)

    def wait_ended(self, tag: str, timeout_s: float, count: int = 1) -> bool:
        """Block until ``count`` requests carrying ``tag`` ended (True), or ``timeout_s``
        passed."""
        with self._log.lock:
            return self._log.lock.wait_for(
                lambda: sum(r.outcome != "in_flight" for r in self._log.by_tag.get(tag, ()))
                >= count, timeout_s)

    def open_calls(self, tag: str | None) -> int:
        """How many requests carrying ``tag`` (None: no tag) are still in flight."""
        with self._log.lock:
            return sum(1 for r in self._log.by_tag.get(tag, ()) if r.outcome == "in_flight")

    def wait_settled_tag(self, tag: str | None, timeout_s: float) -> bool:
        """Block until no request carrying ``tag`` (None: no tag) is in flight (True), or
        ``timeout_s`` passed."""
        with self._log.lock:
            return self._log.lock.wait_for(
                lambda: not any(r.outcome == "in_flight" for r in self._log.by_tag.get(tag, ())),
                timeout_s)

    def wait_settled(self, timeout_s: float) -> bool:
        """Block until no request is in flight (True), or ``timeout_s`` passed (False)."""
        deadline = time.monotonic() + timeout_s
        with self._log.lock:
            while any(r.outcome == "in_flight" for r in self._log.records):
                left = deadline - time.monotonic()
                if left <= 0 or not self._log.lock.wait(left):
                    return not any(r.outcome == "in_flight" for r in self._log.records)
            return True

    # -- ASGI ---------------------------------------------------------------------------------
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        if path in CONTROL_PATHS and not self._controlled(scope):
            await _read_body(receive)
            status = 404 if not self.control else 401
            await _send_json(send, status, {"error": "the control endpoints need the token "
                                            "fake-provider printed (x-fake-control-token)"
                                            if self.control else "not found"})
        elif path == "/_fake/received" and method == "GET":
            await _read_body(receive)
            await _send_json(send, 200, [r.to_json() for r in self.received()])
        elif path == "/_fake/script" and method == "POST":
            try:
                order = json.loads(await _read_body(receive))
                if order.get("tag"):
                    self.script_tag(str(order["tag"]), order["behaviour"])
                else:
                    self.set_behaviour(order["behaviour"])
            except (ValueError, KeyError, TypeError, AttributeError, BehaviourError) as exc:
                await _send_json(send, 400, {"error": str(exc)})
                return
            await _send_json(send, 200, {"behaviour": self.script})
        elif path == "/_fake/reset" and method == "POST":
            self.clear()
            await _read_body(receive)
            await _send_json(send, 200, {"status": "reset"})
        elif path == self.wire.path and method == "POST":
            await self._handle(scope, receive, send)
        else:
            await super().__call__(scope, receive, send)

    def _controlled(self, scope: dict[str, Any]) -> bool:
        """Whether a control request may act: control on, and the token when one is set."""
        if not self.control:
            return False
        if self.token is None:
            return True
        given = dict(scope["headers"]).get(CONTROL_HEADER.encode(), b"")
        return hmac.compare_digest(given, self.token.encode())

    async def _handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await _read_body(receive)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        record = self._record(scope["path"], headers, data, body)
        script = record.behaviour
        _CURRENT.set(record)
        dropped: list[float] = []  # when the fake closed or reset the connection, if it did
        ON_DROP.set(lambda: dropped.append(round(self.now(), 4)))
        outcome, status = "answered", None
        refused: list[int] = []  # the error status the fake refused the request with, if it did
        ON_REFUSE.set(refused.append)
        try:
            if script == STREAM_CUT:
                await self._stream(scope, receive, send, headers, body, cut=True)
                outcome = "cut"
                return
            behaviour = Behaviour.parse(script)
            if behaviour.name == "hang":
                if await self._holds.wait_hung(record.tag, receive):
                    outcome = "released"
                    await _drop(scope, receive, send, reset=True)
                else:
                    outcome = "abandoned"
                return
            if behaviour.delay_s and not await wait_or_leave(receive, behaviour.delay_s):
                outcome = "late"
                return
            if behaviour.name in ("conformant", "slow") and not await self._gate(record,
                                                                                  receive):
                outcome = "late"  # generated, held, and the caller left first
                return
            if behaviour.name == "status":
                outcome, status = "refused", behaviour.status
            elif behaviour.name in ("reset-after-send", "truncated"):
                outcome = "reset" if behaviour.name == "reset-after-send" else "cut"
            answer_as = "conformant" if behaviour.name == "slow" else script
            if record.stream and outcome == "answered":
                await self._stream(scope, receive, send, headers, body, cut=False,
                                   behaviour=answer_as)
                return
            replay = _replaying(body, receive)
            forced = [*scope["headers"], (BEHAVIOUR_HEADER.encode(), answer_as.encode())]
            await self._call({**scope, "headers": forced}, replay, send, body)
        finally:
            if refused and outcome != "refused":
                # the request itself was refused (no API key, a malformed body) before the
                # scripted answer, cut or reset: nothing was generated, nothing is billed
                outcome, status = "refused", refused[0]
            self._end(record, outcome, status, dropped[0] if dropped else None)

    async def _gate(self, record: Received, receive: Any) -> bool:
        """Wait while ``record``'s tag holds its answers, then for its turn among the tag's
        answers (after an earlier answer, a look at the job in between): True once let go (by
        the drill or at the backstop), False if the caller left first; the record says which,
        and when."""
        freed = await self._holds.wait_gate(record.tag, receive, record.at, self.now)
        if freed is not None:
            with self._log.lock:
                record.held, record.freed, record.freed_at = True, freed, round(self.now(), 4)
            if freed == "left":
                return False
        waited = await self.after_answer.wait(
            record.tag, record, receive, record.at, self.now,
            self._holds.max_s(record.tag) if freed is not None else None, record.prompt)
        if waited is not None:
            with self._log.lock:
                record.waited = waited
        return waited != "left"

    def _record(self, path: str, headers: dict[str, str], data: Any, body: bytes) -> Received:
        found = _TAG_BYTES.search(body)
        tag = found.group(0).decode() if found else None
        if len(body) > BODY_LIMIT:  # keep a bounded prefix of a huge prompt, not the prompt
            data = {"prefix": body[:BODY_LIMIT].decode("utf-8", "replace"), "bytes": len(body)}
        with self._log.lock:
            script = self._tags.get(tag, self.script) if tag else self.script
            record = Received(
                seq=len(self._log.records) + 1, at=round(time.monotonic() - self._started, 4),
                path=path, behaviour=script,
                stream=bool(isinstance(data, dict) and data.get("stream")),
                headers=redact_headers(headers), body=data, tag=tag, prompt=prompt_key(data),
            )
            self._log.records.append(record)
            self._log.by_tag.setdefault(tag, []).append(record)
            self._log.lock.notify_all()  # wait_arrival
        if self.on_change is not None:
            self.on_change(tag)
        return record

    def _end(self, record: Received, outcome: str, status: int | None,
             dropped_at: float | None = None) -> None:
        """The call ended: when the fake closed or reset its connection (``dropped_at``: the
        client can learn of the end from then, however long the loop takes to see the close),
        else now."""
        at = round(self.now(), 4) if dropped_at is None else dropped_at
        # the next answer's turn first: whoever sees this call ended sees its turn passed
        self.after_answer.ended(record.tag, record, outcome == "answered", at, record.prompt)
        with self._log.lock:
            record.outcome, record.status, record.ended_at = outcome, status, at
            self._log.lock.notify_all()
        if self.on_change is not None:
            self.on_change(record.tag)

    def _content(self, behaviour: Behaviour, call: CallInput) -> Content:
        record = _CURRENT.get()
        if self.signed and record is not None and behaviour.name in ("conformant", "slow"):
            return Content("text", signature(self.name, record.seq, record.tag))
        return super()._content(behaviour, call)

    async def _stream(self, scope: dict[str, Any], receive: Any, send: Any,
                      headers: dict[str, str], body: bytes, *, cut: bool,
                      behaviour: str = "conformant") -> None:
        try:
            call = self.wire.parse(headers, body, self.expected_api_key)
        except WireError as err:
            note_refusal(err.status)
            payload = json.dumps(self.wire.error(err, "req_fake_stream")).encode()
            await send({"type": "http.response.start", "status": err.status,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": payload})
            return
        content = self._content(Behaviour.parse(behaviour), call)
        text = (json.dumps(content.value, ensure_ascii=False) if content.kind == "json"
                else str(content.value))
        events = sse_events(self.kind, call.model, text)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"),
                                (b"cache-control", b"no-cache")]})
        if cut:
            await send({"type": "http.response.body", "body": events[0], "more_body": True})
            await _drop(scope, receive, send, reset=False)
            return
        for event in events:
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


def _check(behaviour: str) -> str:
    if behaviour != STREAM_CUT:
        Behaviour.parse(behaviour)  # BehaviourError if unknown
    return behaviour


def _replaying(body: bytes, receive: Any) -> Any:
    """A receive() that hands the already-read body over once, then listens to the real one."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
