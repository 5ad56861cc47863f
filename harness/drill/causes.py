"""Why an intent could not be drilled: the cause, in the service's own terms, and the fix.

An intent whose submit was not taken, or whose service never called the fakes (or never the
primary), leaves nothing to judge a promise on: it is *unknown*, with the cause and its fix,
never held. One cause shows only across intents: a service that the drill's concurrency
overloads (some submits answered, others with no answer at all: refused, or timed out) is told
to drill with a lower ``--concurrency``, not to check its profile. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.domain.words import counted
from harness.drill.drills import Drill
from harness.drill.evidence import IntentEvidence

BASE_URL_VARS = {"openai-chat": ("OPENAI_BASE_URL", "/v1"),
                 "anthropic-messages": ("ANTHROPIC_BASE_URL", "")}
Cause = tuple[str, str]  # (what happened, the fix)
#: the unknowns a loaded machine leaves (no evidence either way, and not the service's doing),
#: each in a few words: an intent whose only unknowns are these, and that broke no promise, is
#: drilled again (:mod:`harness.drill.again`; docs/drill.md, "An intent without evidence is
#: drilled again")
SLOW_LOOKS = "the looks at the job were slow"
NO_TIMEOUT = "the service did not act on its timeout while watched"
LATE_UNREACHED = "the late answer did not reach the service"
UNSTARTED = "the service did not start the job within the budget"
SLOW_JOB = "the job completed only after the budget ran out"


def base_url_fix(fakes: Sequence[tuple[str, str, str]]) -> str:
    """The variables and URLs that point a service's providers at the fakes."""
    parts = []
    for name, kind, url in fakes:
        var, suffix = BASE_URL_VARS.get(kind, ("the provider's base URL", ""))
        parts.append(f"{var}={url}{suffix} ({name})")
    return ("start the service with its providers pointed at the drill: " + ", ".join(parts)
            + " (or the gateway's upstreams / api_base at those URLs)")


def unanswered(ev: IntentEvidence) -> bool:
    """The intent's first submit got no answer at all (unreached, or timed out)."""
    return bool(ev.submissions) and ev.submissions[0].status is None


def undrillable(ev: IntentEvidence, drill: Drill, fakes: Sequence[tuple[str, str, str]],
                target: str) -> Cause | None:
    """Why nothing of ``ev`` can be judged (None: it can)."""
    if ev.cause is not None:  # the service's own answer made the intent undrillable
        return ev.cause
    first = ev.submissions[0] if ev.submissions else None
    if not ev.calls and first is not None and first.status is None:
        if first.unreached:
            return (f"could not reach the service at {target or 'the target'} ({first.error})",
                    "start the service so that it listens at that URL before the drill (or "
                    "correct --target)")
        return (f"the service gave no answer to the submit ({first.error}) and never called "
                "a provider", "check that the service answers drill.submit's request within "
                "timeouts.job_s")
    if not ev.calls and first is not None and not 200 <= (first.status or 0) < 300:
        detail = f" ({first.error})" if first.error else ""
        return (f"the service answered the submit with HTTP {first.status}{detail} and never "
                "called a provider",
                "check drill.submit (path, headers, body) against the service's API")
    if not ev.calls and ev.untagged:
        return (f"the fakes got {counted(ev.untagged, 'provider call')} while this intent ran, "
                "none carrying a drill tag: the service does not pass the submitted text into "
                "its provider request", "send the text the drill submits (it holds the tag "
                "drill-<12 hex>) to the provider unchanged, or put {tag} where the service "
                "copies it into the prompt (drill.submit.body)")
    if unstarted(ev):
        return (f"the service never called a provider for this intent within the drill's "
                f"budget (the job was still {ev.observations[-1].raw_status!r} at the last "
                "look), so nothing was drilled", "a service too loaded to start its jobs "
                "within timeouts.job_s: drill with a lower --concurrency; if no job ever "
                "starts, check the service's worker, and " + base_url_fix(fakes))
    if not ev.calls:
        return ("the service never called the fakes for this intent, so nothing was drilled",
                base_url_fix(fakes))
    if drill.name != "control" and not any(c.role == "primary" for c in ev.calls):
        return (f"no call reached the primary, so the scripted failure ({drill.description}) "
                "never happened", "check which provider the profile marks role: primary")
    return None


def unstarted(ev: IntentEvidence) -> bool:
    """The service took the job (a job id), and no provider call of the intent came (nor an
    untagged one) while the job still showed running when the budget ran out: it had not got
    to the job yet (a loaded machine), no evidence either way."""
    first = ev.submissions[0] if ev.submissions else None
    return (not ev.calls and not ev.untagged and first is not None and bool(first.job_id)
            and 200 <= (first.status or 0) < 300 and bool(ev.observations)
            and ev.observations[-1].status == "running")


def overloaded(evidence: Sequence[IntentEvidence], concurrency: int) -> Cause | None:
    """The run's pattern of overload: at least two intents' submits got no answer at all while
    others' were answered. (What to add to those intents' cause, the fix naming
    ``--concurrency``.)"""
    lost = sum(unanswered(ev) for ev in evidence)
    taken = sum(bool(ev.submissions) and ev.submissions[0].status is not None
                for ev in evidence)
    if lost < 2 or not taken:
        return None
    lower = max(1, concurrency // 4)
    were = "was" if taken == 1 else "were"
    return (f"; {lost} of {len(evidence)} intents got no answer to their submit while {taken} "
            f"{were} answered: the service could not take {concurrency} intents at once",
            f"drill with a lower --concurrency (it was {concurrency}; try --concurrency "
            f"{lower}), or let the service take more connections at once (a threaded server, "
            "a longer accept queue)")
