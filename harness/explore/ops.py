"""Run a plan's operations against a store session and record them as history ops.

A worker calls :meth:`Executor.perform` on its own thread and keeps what happened as events; the
controller turns events into history ops (:meth:`Executor.record`) in a fixed order, so target
ids become the same aliases (``job``, ``A``, ``?job``) on every run and the history is the same
bytes for the same schedule. Values are the scenario engine's (:mod:`harness.scenarios.values`),
so its checkers judge explore's histories unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.domain import intent_of
from harness.explore.plan import EVENT_KINDS, OWN, OpSpec, Plan
from harness.scenarios.history import History, Op, OpType
from harness.scenarios.targets.base import Reply, TargetSession
from harness.scenarios.values import (
    Aliases,
    attempt_value,
    error_value,
    job_value,
    list_value,
    reply_extras,
    result_digest,
)


@dataclass(frozen=True, slots=True)
class Invoked:
    """An operation was sent: ``raw`` holds the target ids it named."""

    op: OpSpec
    raw: dict[str, str]


@dataclass(frozen=True, slots=True)
class Completed:
    """An operation was answered."""

    op: OpSpec
    raw: dict[str, str]
    reply: Reply


@dataclass
class Executor:
    """One schedule's operations: names, aliases, and the history they are written to."""

    plan: Plan
    session: TargetSession
    tag: str
    history: History
    aliases: Aliases = field(default_factory=Aliases)
    names: dict[str, str] = field(default_factory=dict)  # name → target id (first binding wins)
    local: dict[str, dict[str, str]] = field(default_factory=dict)  # per client: own names
    open_invokes: dict[str, Op] = field(default_factory=dict)
    fresh_owners: bool = True  # a store: each schedule's owners are new (alice.<tag>)
    promises: dict[str, Any] = field(default_factory=dict)  # a profile's, written into faults
    lease_ms: int | None = None  # a profile's lease, written next to busy answers
    unseen: frozenset[str] = frozenset()  # create fields the target does not make observable
    texts: dict[str, str] = field(default_factory=dict)  # intent name → JSON text, made once

    def intent_text(self, name: str) -> str:
        """The plan's intent ``name`` as JSON text: made once per schedule, not per create."""
        text = self.texts.get(name)
        if text is None:  # two workers may both make it: the same text
            text = self.texts[name] = self.plan.intent_text(name)
        return text

    # -- on the worker's thread ---------------------------------------------------------------
    def resolve(self, op: OpSpec) -> dict[str, str] | None:
        """The target ids ``op`` needs, or None when a name it uses was never bound (the op is
        skipped, as a scenario skips a step on a job that was never created)."""
        own = self.local.setdefault(op.process, {})
        raw: dict[str, str] = {}
        for kind in ("job", "attempt"):
            name = getattr(op, kind)
            if name is None:
                continue
            found = own.get(name) if name == OWN else own.get(name) or self.names.get(name)
            if found is None:
                return None
            raw[kind] = found
        return raw

    def call(self, op: OpSpec, raw: dict[str, str]) -> Reply:
        """Send ``op`` and return the API-shaped answer."""
        session = self.session
        owner = f"{op.owner}.{self.tag}" if self.fresh_owners else op.owner
        if op.f == "create":
            assert op.key is not None and op.intent is not None
            key = f"{self.tag}-{op.key}"  # fresh keys per schedule: one database serves them all
            return session.create_job(owner, key, self.intent_text(op.intent))
        if op.f == "read":
            return session.get_job(owner, raw["job"])
        if op.f == "attempts":
            return session.list_attempts(owner, raw["job"])
        if op.f == "races":
            return session.list_races(owner, raw["job"])
        if op.f == "fault":
            return session.inject_fault(op.reason or "handler_error")  # type: ignore[attr-defined]
        if op.f == "start":
            return session.start_attempt(owner, raw["job"], op.provider or "primary")
        body: dict[str, Any] = {"type": op.f}
        if op.f == "succeeded":
            body["result"] = op.result or {}
        elif op.f == "failed":
            body["error"] = op.error or {"code": "provider_error", "message": ""}
        elif op.f == "cancelled":
            body["reason"] = op.reason or "operator"
        return session.post_event(owner, raw["attempt"], body)

    def perform(self, op: OpSpec, events: list[Any]) -> None:
        """Resolve, send and answer ``op``, appending :class:`Invoked` / :class:`Completed`."""
        raw = self.resolve(op)
        if raw is None:
            return
        events.append(Invoked(op, raw))
        reply = self.call(op, raw)
        if reply.ok and isinstance(reply.body, dict) and reply.body.get("id") is not None:
            own = self.local.setdefault(op.process, {})
            if op.f == "create":
                own[OWN] = str(reply.body["id"])
            if op.save and op.f in ("create", "start"):
                own[op.save] = str(reply.body["id"])
        events.append(Completed(op, raw, reply))

    # -- on the controller's thread -------------------------------------------------------------
    def inline(self, op: OpSpec) -> None:
        """Run ``op`` right here (setup and epilogue) and record it."""
        events: list[Any] = []
        self.perform(op, events)
        for event in events:
            self.record(event)

    def record(self, event: Invoked | Completed) -> None:
        """Write one event to the history (fixed order: the caller's)."""
        op = event.op
        if isinstance(event, Invoked):
            self.open_invokes[op.process] = self.history.invoke(
                op.process, op.f, self._invoke_value(op, event.raw))
            return
        reply = event.reply
        body = reply.body if isinstance(reply.body, dict) else {}
        if reply.ok and op.save and op.f in ("create", "start") and body.get("id") is not None:
            raw = str(body["id"])
            self.aliases.name(raw, op.save)
            self.names.setdefault(op.save, raw)
        invoke = self.open_invokes.pop(op.process)
        type_, value = self._completion(op, reply)
        self.history.complete(invoke, type_, value)

    def _invoke_value(self, op: OpSpec, raw: dict[str, str]) -> dict[str, Any]:
        if op.f == "fault":
            return {"fault": op.reason or "handler_error", **self.promises}
        value: dict[str, Any] = {"owner": op.owner}
        if op.f == "create":
            assert op.intent is not None
            intent = intent_of(self.intent_text(op.intent))
            value.update(key=op.key, fingerprint=intent.fingerprint,
                         max_open_attempts=intent.policy.max_open_attempts)
            return value
        if "job" in raw:
            value["job"] = self.aliases.of(raw["job"], "job")
        if op.f == "start":
            value.update(provider=op.provider or "primary", attempt=op.save)
        if "attempt" in raw:
            value["attempt"] = self.aliases.of(raw["attempt"], "attempt")
        if op.f == "succeeded":
            value["result_sha256"] = result_digest(op.result or {})
        elif op.f == "failed":
            value["error"] = (op.error or {}).get("code", "provider_error")
        elif op.f == "cancelled":
            value["reason"] = op.reason or "operator"
        return value

    def _completion(self, op: OpSpec, reply: Reply) -> tuple[OpType, dict[str, Any]]:
        type_, value = self._value(op, reply)
        return type_, {**value, **reply_extras(reply, self.lease_ms)}  # a profile's: none else

    def _value(self, op: OpSpec, reply: Reply) -> tuple[OpType, dict[str, Any]]:
        if not reply.ok:
            return ("info" if reply.indeterminate else "fail"), error_value(reply, self.aliases)
        if op.f == "fault":
            return "ok", {"armed": True}
        if op.f == "create":
            value = job_value(reply.body, self.aliases)
            if "created" not in self.unseen:  # unmarked replays: a 201 says nothing
                value["created"] = reply.status == 201
            return "ok", value
        if op.f == "read":
            return "ok", job_value(reply.body, self.aliases)
        if op.f in ("attempts", "races"):
            return "ok", list_value(reply.body, self.aliases, op.f)
        assert op.f == "start" or op.f in EVENT_KINDS
        return "ok", attempt_value(reply.body, self.aliases)
