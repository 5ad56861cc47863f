"""Per-input evidence of a certification, and what changed since the previous one (drift).

A record keeps, per golden input, how many samples passed each statistical check and the
distinct short reasons the others failed (:class:`InputTally`). The next ``certify`` compares
its tallies with the previous lock's, input by input, and says what got worse or better::

    en-refund: 3/3 → 1/3, new failure: hallucinated key 'note'

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from harness.console import clean
from harness.contracts.records import MAX_INPUT_FAILURES, CertificationRecord, InputTally
from harness.domain.clock import rfc3339

ALL = "all"  # the tally of samples that passed every statistical check
LABEL_CHARS = 100
_TRAILER = re.compile(r" \((not in the contract's schema|output\.allow_stripping [^)]*)\)$")


def failure_label(reason: str) -> str:
    """A short, stable name for a failure, for the per-input tally: the reason, trimmed."""
    label = _TRAILER.sub("", reason.split(" | ")[0].strip())
    return clean(label, one_line=True, limit=LABEL_CHARS)


def tally(
    golden_ids: Sequence[str],
    checks: Mapping[str, Sequence[tuple[bool, str]]],
) -> dict[str, InputTally]:
    """Per input: samples, passes per check (and of all checks), distinct failure labels
    (each failed sample named by the first check it failed, in ``checks`` order).

    ``golden_ids[i]`` is sample ``i``'s input; ``checks[name][i]`` is ``(passed, reason)``.
    """
    out: dict[str, dict[str, Any]] = {}
    for i, golden_id in enumerate(golden_ids):
        entry = out.setdefault(golden_id, {"samples": 0, "passed": {}, "failures": []})
        entry["samples"] += 1
        every = True
        for name, results in checks.items():
            ok, reason = results[i]
            entry["passed"][name] = entry["passed"].get(name, 0) + ok
            # A sample's failure is named once, by the first check it failed: a schema failure
            # that the round trip then also misses is one failure, not two.
            label = failure_label(reason) if every and not ok and reason else ""
            every = every and ok
            if label and label not in entry["failures"]:
                entry["failures"].append(label)
        entry["passed"][ALL] = entry["passed"].get(ALL, 0) + every
    return {
        gid: InputTally(e["samples"], e["passed"], tuple(e["failures"][:MAX_INPUT_FAILURES]))
        for gid, e in out.items()
    }


def drift(
    previous: CertificationRecord | None, now: Mapping[str, InputTally]
) -> dict[str, Any] | None:
    """What changed per input since ``previous`` (``None`` when there is nothing to compare)."""
    if previous is None or not previous.inputs:
        return None
    changes: list[dict[str, Any]] = []
    for golden_id in sorted(set(previous.inputs) | set(now)):
        before, after = previous.inputs.get(golden_id), now.get(golden_id)
        if before is None or after is None:
            changes.append({
                "input": golden_id, "change": "added" if before is None else "removed",
            })
            continue
        b_rate = before.passed.get(ALL, 0) / before.samples if before.samples else 0.0
        a_rate = after.passed.get(ALL, 0) / after.samples if after.samples else 0.0
        new = [f for f in after.failures if f not in before.failures]
        gone = [f for f in before.failures if f not in after.failures]
        if a_rate == b_rate and not new:
            continue
        changes.append({
            "input": golden_id,
            "change": "worse" if a_rate < b_rate or (a_rate == b_rate and new) else "better",
            "before": [before.passed.get(ALL, 0), before.samples],
            "after": [after.passed.get(ALL, 0), after.samples],
            "new_failures": new,
            "gone_failures": gone,
        })
    return {
        "since": rfc3339(previous.certified_at),
        "previous_verdict": previous.verdict,
        "previous_config_hash": previous.config_hash,
        "inputs": changes,
    }


def describe_change(change: Mapping[str, Any]) -> str:
    """``en-refund: 3/3 → 1/3, new failure: hallucinated key 'note'``."""
    golden_id = change["input"]
    if change["change"] in ("added", "removed"):
        return f"{golden_id}: input {change['change']}"
    (bp, bn), (ap, an) = change["before"], change["after"]
    text = f"{golden_id}: {bp}/{bn} → {ap}/{an}"
    new = change.get("new_failures") or []
    if new:
        text += f", new failure{'s' if len(new) > 1 else ''}: " + "; ".join(new)
    elif change["change"] == "better" and change.get("gone_failures"):
        text += ", no longer: " + "; ".join(change["gone_failures"])
    return text


def drift_lines(record: CertificationRecord, *, limit: int = 10) -> list[str]:
    """The drift of ``record`` in words: worse first, then better; empty without drift."""
    if not record.drift:
        return []
    changes = sorted(
        record.drift.get("inputs", []),
        key=lambda c: (c["change"] != "worse", c["change"] != "better", c["input"]),
    )
    lines = [describe_change(c) for c in changes[:limit]]
    if len(changes) > limit:
        lines.append(f"… and {len(changes) - limit} more input(s)")
    return lines
