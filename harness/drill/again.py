"""An intent without evidence is drilled again (docs/drill.md): which intents, and how the run
says so. Pure.

A loaded machine can leave an intent without evidence for a promise: the drill could not look
at the job twice while the fallback's answer was held, the service did not act on its timeout
while watched, the late answer never reached the service, the service had not started the
job when the budget ran out, or a provider asked in time answered only after it ran out (the
load words of :mod:`harness.drill.causes`). Such an intent
says *unknown*, honestly, but the unknown comes from the load, not from the service. After the
round, the engine drills each such trial again as a fresh intent (a new tag and key, the same
drill), at most :data:`REDRILLS` times, the fresh intents of a round all at once; the trial is
judged by its last intent.

Never to hide a finding: an intent that broke a promise is never replaced (whatever else it
left unknown), nor is one with an unknown of any other cause (the service's API, its profile,
an unanswered submit): those stand as they are. An intent still without evidence after its
re-drills stays unknown, with its reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from harness.drill.findings import IntentVerdict

#: fresh intents per trial at most, after the round, for an intent the load left without
#: evidence (``--drill-again N``; 0: never)
REDRILLS = 2


def load_only(v: IntentVerdict) -> tuple[str, ...]:
    """Why the load left ``v`` without evidence: the load words of its unknowns, when it broke
    no promise and every unknown is the load's (empty: not so; it stands as judged)."""
    if any(f.verdict == "broken" for f in v.findings):
        return ()
    unknown = [f for f in v.findings if f.verdict == "unknown"]
    if not unknown or any(not f.load for f in unknown):
        return ()
    return tuple(dict.fromkeys(f.load for f in unknown))


def drill_again(v: IntentVerdict, limit: int = REDRILLS) -> bool:
    """Is ``v``'s trial drilled again: the load alone left it unknown, and it replaced fewer
    than ``limit`` intents so far?"""
    return len(v.earlier) < limit and bool(load_only(v))


def replacing(fresh: IntentVerdict, earlier: IntentVerdict) -> IntentVerdict:
    """``fresh`` as its trial's verdict, in place of ``earlier`` (and what that one replaced)."""
    fresh.earlier = [*earlier.earlier, earlier]
    return fresh


def why(v: IntentVerdict) -> str:
    """Why an intent that was replaced was drilled again (the load words of its unknowns)."""
    return " and ".join(load_only(v)) or "no evidence"


def tally(reasons: Iterable[str]) -> tuple[tuple[str, int], ...]:
    """(reason, how many intents were drilled again for it), in the order first seen."""
    return tuple(Counter(reasons).items())
