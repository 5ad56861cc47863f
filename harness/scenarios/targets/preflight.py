"""Before any scenario runs against a service: can it be reached, does it accept every
owner's token (or the owner as the profile presents it), and does it accept a create at all?
A service refusing our credentials is a configuration error (exit 2 naming the owner and the
fix), not thirteen unknown scenarios each repeating the same fix (qa Q6).

The probe reads a job that does not exist, once per owner: a service speaking API.md answers
404 to a token it accepts (another owner's job, and a missing one, are 404) and 401 to one it
does not. Nothing is written, so no side-effect counter moves. A profiled service is then sent
two creates (fresh keys, two intents, as its body template renders them): a service refusing both
with one 4xx (422 to a body it does not take, 401, 404) stops the run with exit 2 naming it.
Side-effect counters are read per run, so these two jobs count in none.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence

import httpx

from harness.domain.errors import ConfigError
from harness.scenarios.checkers.base import TOKENS_FIX
from harness.scenarios.targets.base import Reply, TargetSession

REFUSED = (401, 403)
#: a create answer saying "this key is used" (API.md's, or a profile's declared answer): the
#: body was understood, so the service does not refuse every create
KEY_REUSED_CODES = ("idempotency_key_reused", "still_in_progress", "still_locked")


def _read_missing_job(session: TargetSession, owner: str, description: str) -> Reply:
    """Read a job that does not exist as ``owner``; :class:`ConfigError` when nothing answers."""
    reply = session.get_job(owner, f"failover-harness-preflight-{secrets.token_hex(4)}")
    if reply.status == 0:
        raise ConfigError(f"cannot reach the target {description}: "
                          f"{reply.detail or 'no answer'}", field="--target",
                          fix="start the service or fix the URL (and the profile's paths)")
    return reply


def check_owners(session: TargetSession, owners: Iterable[str], description: str, *,
                 tokens_given: bool = True) -> None:
    """Read a missing job as each owner (``""``: without a token); raise :class:`ConfigError`
    when the service cannot be reached or refuses an owner's token."""
    refused: list[tuple[str, int, str]] = []
    for owner in owners:
        reply = _read_missing_job(session, owner, description)
        if reply.status in REFUSED:
            refused.append((owner, reply.status, reply.code))
    if not refused:
        return
    owner, status, code = refused[0]
    if not tokens_given:
        raise ConfigError(
            f"{description} refused a request without a token ({status} {code})",
            field="--tokens-file",
            fix="pass --tokens-file ({token: owner}) or HARNESS_TOKENS; a service taking its key "
                "in another header needs the profile's owners: too, and one taking the owner's "
                "name: owners: {header: X-Owner, value: \"{owner}\"} (no tokens)")
    others = [o for o, *_ in refused[1:]]
    also = f" ({', '.join(others)}'s too)" if others else ""
    fix = TOKENS_FIX if status == 401 else (
        "check --tokens-file: the service forbids this owner even a read of a job that does not "
        "exist (API.md answers 404 there)")
    raise ConfigError(
        f"owner {owner}'s token was refused ({status} {code}) by {description}{also}: no "
        "scenario could show anything", field="--tokens-file", fix=fix)


def everything_404(http: httpx.Client, base_url: str, paths: Iterable[str]) -> bool:
    """Do ``/healthz``, ``/`` and ``paths`` all answer 404 under ``base_url``? Then the base
    URL is wrong (a prefix too many or too few), not the service's promises."""
    for path in ("/healthz", "/", *paths):
        try:
            if http.get(base_url.rstrip("/") + path).status_code != 404:
                return False
        except httpx.TransportError:
            return False
    return True


def wrong_base_url(description: str, what: str) -> ConfigError:
    return ConfigError(
        f"{what}, and so did GET /healthz and GET / at {description}: is the base URL right?",
        field="--target", fix="check --target's scheme, host, port and path prefix (the "
        "profile's paths are added to it)")


def check_named_owner(session: TargetSession, owner: str, description: str, place: str) -> None:
    """Read a missing job as ``owner``, presented by name (the profile's ``owners:``): a 401 or
    403 there means the profile names the wrong place or form for the owner."""
    reply = _read_missing_job(session, owner, description)
    if reply.status in REFUSED:
        raise ConfigError(
            f"{description} refused owner {owner}, presented in the {place} ({reply.status} "
            f"{reply.code}): no scenario could show anything", field="owners",
            fix="write the profile's owners: as the service reads the owner, e.g. owners: "
                "{header: X-Owner, value: \"{owner}\"} (docs/scenarios.md, Owners)")


def refusal_fix(status: int) -> str:
    """What to look at when the service refuses every create with ``status``."""
    if status in REFUSED:
        return ("check how an owner is presented (the profile's owners:, and --tokens-file for "
                "{token}); docs/scenarios.md, Owners")
    if status in (404, 405):
        return "check operations.create_job's method and path against the service's API"
    return ("describe its body in operations.create_job.body: a template of the service's own "
            "create request, e.g. body: {text: \"{prompt}\"} (docs/scenarios.md, Body templates)")


def check_creates(session: TargetSession, owner: str, bodies: Sequence[str],
                  description: str) -> None:
    """Create one job per body in ``bodies``, each under a fresh key: when the service refuses
    every one with the same 4xx that is not the key-reused answer, no scenario can show
    anything — a configuration error (exit 2) naming the answer and the fix, not a list of
    broken promises."""
    run = secrets.token_hex(4)
    replies = [session.create_job(owner, f"failover-harness-preflight-{run}-{i}", text)
               for i, text in enumerate(bodies, 1)]
    statuses = {r.status for r in replies}
    if len(statuses) != 1 or not all(400 <= r.status < 500 for r in replies):
        return
    if any(r.code in KEY_REUSED_CODES for r in replies):
        return
    status, code = replies[0].status, replies[0].code
    named = "" if code == f"http_{status}" else f" {code}"
    body = replies[0].body if isinstance(replies[0].body, dict) else {}
    said = f", answering {body['said']}" if body.get("said") else ""
    raise ConfigError(
        f"the service refused every create with {status}{named} ({len(replies)} of "
        f"{len(replies)} preflight creates, each with a fresh key and another intent{said}) "
        f"at {description}: no scenario could show anything", field="operations.create_job",
        fix=refusal_fix(status))
