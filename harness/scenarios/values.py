"""Replies into history values: the fields checkers need, with target ids replaced by aliases.

Target ids (``job_…``, random UUIDs from a service) never reach the history: a job is named by
the scenario (``save: job``), an attempt by its step (``name: A``); an id the scenario did not
name gets ``?job``, ``?attempt``… in order of appearance. Results are kept as their SHA-256.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from harness.domain import payload_digest
from harness.domain.errors import InvalidIntent
from harness.scenarios.checkers.base import TOKENS_FIX
from harness.scenarios.history import OpType
from harness.scenarios.model import IntentSpec
from harness.scenarios.targets.base import Reply
from harness.target.fingerprints import js_stringify


class Aliases:
    """Target id → alias, and back."""

    def __init__(self) -> None:
        self.by_raw: dict[str, str] = {}
        self.raw: dict[str, str] = {}

    def name(self, raw: str, wanted: str) -> str:
        """Give ``raw`` the alias ``wanted`` (``wanted~2``… if taken); keep an existing alias."""
        if raw in self.by_raw:
            return self.by_raw[raw]
        alias, n = wanted, 2
        while alias in self.raw:
            alias, n = f"{wanted}~{n}", n + 1
        self.by_raw[raw] = alias
        self.raw[alias] = raw
        return alias

    def of(self, raw: Any, kind: str) -> str | None:
        """The alias of ``raw`` (a fresh ``?kind`` alias if it was never named)."""
        if raw is None:
            return None
        return self.name(str(raw), f"?{kind}")


_DIGESTS: dict[str, str] = {}  # a value's repr → its digest (a run repeats a few results)
_DIGESTS_KEPT = 4096
_DIGEST_KEY_MAX = 4096  # characters of repr: the memory kept stays bounded (16 MiB)


def result_digest(result: Any) -> str:
    """:func:`~harness.domain.payload_digest` of ``result``, remembered by its ``repr`` (the
    same repr is the same JSON value: keys, types and floats are all spelled out); RFC 8785
    in pure Python is the dearest part of writing a history line. Raises as it does."""
    key = repr(result)
    if len(key) > _DIGEST_KEY_MAX:  # a large result (a hostile service's) is not kept
        return payload_digest(result)
    found = _DIGESTS.get(key)
    if found is None:
        found = payload_digest(result)
        if len(_DIGESTS) >= _DIGESTS_KEPT:
            _DIGESTS.clear()
        _DIGESTS[key] = found
    return found


def _digest(result: Any) -> str | None:
    if result is None:
        return None
    try:
        return result_digest(result)
    except InvalidIntent:
        return "unhashable"


def _present(body: dict[str, Any], value: dict[str, Any], source: dict[str, str]) -> dict[str, Any]:
    """Only the fields the target answered: a service (or profile) without versions has no
    ``version`` in the history, so a check on it is unknown rather than failed."""
    return {ours: value[ours] for ours, theirs in source.items() if theirs in body}


_JOB_SOURCE = {"job": "id", "status": "status", "version": "version",
               "completed_by": "completed_by", "result_sha256": "result",
               "fingerprint": "fingerprint"}
_ATTEMPT_SOURCE = {"attempt": "id", "job": "job_id", "state": "state",
                   "read_version": "read_version", "outcome": "outcome"}


def job_value(body: Any, aliases: Aliases) -> dict[str, Any]:
    if not isinstance(body, dict):
        return {"malformed": True}
    return _present(body, {
        "job": aliases.of(body.get("id"), "job"),
        "status": body.get("status"),
        "version": body.get("version"),
        "completed_by": aliases.of(body.get("completed_by"), "attempt"),
        "result_sha256": _digest(body.get("result")),
        "fingerprint": body.get("fingerprint"),
    }, _JOB_SOURCE)


def attempt_value(body: Any, aliases: Aliases) -> dict[str, Any]:
    if not isinstance(body, dict):
        return {"malformed": True}
    return _present(body, {
        "attempt": aliases.of(body.get("id"), "attempt"),
        "job": aliases.of(body.get("job_id"), "job"),
        "state": body.get("state"),
        "read_version": body.get("read_version"),
        "outcome": body.get("outcome"),
    }, _ATTEMPT_SOURCE)


def race_value(body: Any, aliases: Aliases) -> dict[str, Any]:
    if not isinstance(body, dict):
        return {"malformed": True}
    return {
        "attempt": aliases.of(body.get("attempt_id"), "attempt"),
        "winner": aliases.of(body.get("winner_attempt_id"), "attempt"),
        "reason": body.get("reason"),
        "payload_sha256": body.get("payload_sha256"),
    }


def list_value(body: Any, aliases: Aliases, key: str) -> dict[str, Any]:
    if not isinstance(body, list):
        return {"malformed": True}
    item = attempt_value if key == "attempts" else race_value
    return {key: [item(entry, aliases) for entry in body]}


def error_value(reply: Reply, aliases: Aliases) -> dict[str, Any]:
    """A fail (or info, status 0) value: the status and problem code, and who blocks."""
    value: dict[str, Any] = {"status": reply.status, "error": reply.code}
    body = reply.body if isinstance(reply.body, dict) else {}
    if "blocking_attempt_id" in body:
        value["blocking"] = aliases.of(body["blocking_attempt_id"], "attempt")
    if reply.status == 0 and reply.detail:
        value["detail"] = reply.detail
    return value


def reply_extras(reply: Reply, lease_ms: int | str | None = None) -> dict[str, Any]:
    """What a target adds to any answer: whether a create was marked a replay, the busy answers
    retried before it (and the lease they are judged against), a 5xx body's start, and whether
    the request had to be sent again on a new connection (``resent``: why)."""
    extras: dict[str, Any] = {}
    if reply.replayed is not None:
        extras["replayed"] = reply.replayed
    if reply.busy:
        extras["busy"] = dict(reply.busy)
        extras["busy_ms"] = reply.busy_ms
        if lease_ms is not None:
            extras["lease_ms"] = lease_ms
    if reply.excerpt:
        extras["body"] = reply.excerpt
    if reply.resent:
        extras["resent"] = reply.resent  # a client-side artefact, repaired: see targets.transport
    return extras


def likely_fix(reply: Reply) -> str:
    """What the user most likely has to change when a step was refused like ``reply``."""
    status = reply.status
    if status == 0:
        return ("no answer came: check that the service is up and that --target names it"
                + ("" if reply.never_sent else ", and see the service's log"))
    if status == 401:
        return TOKENS_FIX
    if status == 403:
        return ("the service forbids this owner: check the tokens (--tokens-file) and the "
                "service's permissions for them")
    if status in (404, 405):
        return ("the service does not serve this route: check the --target base URL, and the "
                "operations (paths, methods) of --target-profile if its API differs from API.md")
    if status in (400, 415, 422):
        return ("the service rejected the request as sent: if its API differs from API.md, "
                "describe it with --target-profile (paths, headers, body)")
    if status >= 500:
        return "the service failed: see its log (the answer is in the history)"
    return "see the answer in the history, and the scenario's expect:"


def op_type(reply: Reply) -> OpType:
    """A reply as the history's completion type: ok, fail, or info (no answer)."""
    if reply.ok:
        return "ok"
    return "info" if reply.indeterminate else "fail"


def canonical_value(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def fingerprint_as_compared(intent: IntentSpec, mode: str) -> str:
    """The intent's fingerprint as the target compares intents: API.md's (canonical JSON of the
    intent with its defaults filled in), ``json`` (canonical JSON of the body as sent),
    ``parsed-json`` (JavaScript's JSON.stringify of the parsed body: key order counts) or
    ``bytes`` (the exact body). ``none`` (the service compares nothing) judges by meaning."""
    if mode == "bytes":
        return hashlib.sha256(intent.text.encode("utf-8")).hexdigest()
    if mode == "json":
        return payload_digest(json.loads(intent.text))
    if mode == "parsed-json":
        return hashlib.sha256(js_stringify(intent.text).encode("utf-8")).hexdigest()
    return intent.fingerprint  # canonical, and none: the intent is what it means
