"""Before any scenario runs against a service: can it be reached, and does it accept every
owner's token? A service refusing our credentials is a configuration error (exit 2 naming the
owner and the fix), not thirteen unknown scenarios each repeating the same fix (qa Q6).

The probe reads a job that does not exist, once per owner: a service speaking API.md answers
404 to a token it accepts (another owner's job, and a missing one, are 404) and 401 to one it
does not. Nothing is written, so no side-effect counter moves.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

import httpx

from harness.domain.errors import ConfigError
from harness.scenarios.checkers.base import TOKENS_FIX
from harness.scenarios.targets.base import TargetSession

REFUSED = (401, 403)


def check_owners(session: TargetSession, owners: Iterable[str], description: str, *,
                 tokens_given: bool = True) -> None:
    """Read a missing job as each owner (``""``: without a token); raise :class:`ConfigError`
    when the service cannot be reached or refuses an owner's token."""
    refused: list[tuple[str, int, str]] = []
    for owner in owners:
        reply = session.get_job(owner, f"failover-harness-preflight-{secrets.token_hex(4)}")
        if reply.status == 0:
            raise ConfigError(f"cannot reach the target {description}: "
                              f"{reply.detail or 'no answer'}", field="--target",
                              fix="start the service or fix the URL (and the profile's paths)")
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
                "in another header needs the profile's auth: too")
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
