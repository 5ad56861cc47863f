"""What every precision service shares and API.md fixes the same way for all of them: tokens from
``--tokens-file`` (YAML ``{token: owner}``) or ``HARNESS_TOKENS``, the idempotency-key rule, the
create body's validation, and announcing the listening URL on stdout (the fixtures read it).

Everything API.md leaves open (ids, versions, digests, times, servers, storage) is each
service's own choice, in its own module.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import yaml

STATES_OPEN = ("starting", "running", "unknown")
#: the event type → (states it may leave, the state it enters); API.md's table
TRANSITIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "dispatched": (("starting",), "running"),
    "timed_out": (("starting", "running"), "unknown"),
    "failed": (("starting", "running", "unknown"), "failed"),
    "succeeded": (("starting", "running", "unknown"), "succeeded"),
    "cancelled": (("starting", "running", "unknown"), "cancelled"),
}


class Invalid(Exception):
    """A request API.md says is invalid: its status, machine code, message and extra fields."""

    def __init__(self, status: int, code: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.extra = extra


def load_tokens(tokens_file: str | None) -> dict[str, str]:
    """token → owner."""
    if tokens_file:
        raw = yaml.safe_load(Path(tokens_file).read_text(encoding="utf-8")) or {}
        return {str(t): str(o) for t, o in raw.items()}
    pairs = os.environ.get("HARNESS_TOKENS", "")
    tokens: dict[str, str] = {}
    for entry in pairs.split(","):
        token, _, owner = entry.strip().partition("=")
        if token and owner:
            tokens[token.strip()] = owner.strip()
    return tokens


def owner_of(authorization: str | None, tokens: dict[str, str]) -> str:
    """The owner a ``Bearer`` token maps to, else 401 ``unauthenticated``."""
    scheme, _, token = (authorization or "").partition(" ")
    owner = tokens.get(token.strip()) if scheme.lower() == "bearer" else None
    if owner is None:
        raise Invalid(401, "unauthenticated", "a valid bearer token is required")
    return owner


def check_key(key: str | None) -> str:
    """API.md: 1–255 printable ASCII characters, no spaces."""
    if key is None:
        raise Invalid(400, "idempotency_key_missing", "the Idempotency-Key header is required")
    if not 1 <= len(key) <= 255 or any(not 0x21 <= ord(c) <= 0x7E for c in key):
        raise Invalid(400, "idempotency_key_invalid",
                      "Idempotency-Key must be 1-255 printable ASCII characters without spaces")
    return key


def _field_error(name: str, what: str) -> Invalid:
    return Invalid(422, "invalid_request", f"{name}: {what}", field=name)


def parse_intent(body: Any) -> dict[str, Any]:
    """The create body with its defaults filled in, or 422 ``invalid_request`` naming the field."""
    if not isinstance(body, dict):
        raise _field_error("body", "must be a JSON object")
    contract = body.get("contract")
    if not isinstance(contract, str) or not contract:
        raise _field_error("contract", "must be a non-empty string")
    if not isinstance(body.get("input"), dict):
        raise _field_error("input", "must be an object")
    params = body.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise _field_error("params", "must be an object")
    policy = body.get("policy")
    if policy is None:
        policy = {}
    if not isinstance(policy, dict):
        raise _field_error("policy", "must be an object")
    unknown = sorted(set(policy) - {"max_open_attempts"})
    if unknown:
        raise _field_error(f"policy.{unknown[0]}", "unknown field")
    limit = policy.get("max_open_attempts", 1)
    if isinstance(limit, bool) or limit not in (1, 2):
        raise _field_error("policy.max_open_attempts", "must be 1 or 2")
    return {"contract": contract, "input": body["input"], "params": params,
            "policy": {"max_open_attempts": int(limit)}}


def parse_event(body: Any) -> dict[str, Any]:
    """An attempt event, checked against API.md's table (the body fields each type needs)."""
    if not isinstance(body, dict):
        raise _field_error("body", "must be a JSON object")
    kind = body.get("type")
    if kind not in TRANSITIONS:
        raise _field_error("type", f"must be one of {', '.join(TRANSITIONS)}")
    if kind == "succeeded" and not isinstance(body.get("result"), dict):
        raise _field_error("result", "a succeeded event carries the result object")
    if kind == "failed":
        error = body.get("error")
        if not isinstance(error, dict) or not isinstance(error.get("code"), str):
            raise _field_error("error", "a failed event carries error: {code, message}")
    if kind == "cancelled" and body.get("reason") is not None and not isinstance(
            body.get("reason"), str):
        raise _field_error("reason", "must be a string")
    return body


def service_args(description: str, **defaults: Any) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tokens-file", default=None)
    parser.set_defaults(**defaults)
    return parser


def announce(url: str) -> None:
    """The line the test fixtures wait for."""
    print(f"listening on {url}", flush=True)
    sys.stdout.flush()
