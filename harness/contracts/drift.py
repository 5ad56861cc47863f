"""Per-input evidence of a certification, and what changed since the previous one (drift).

A record keeps, per golden input, how many samples passed each statistical check and the
distinct short reasons the others failed (:class:`InputTally`). The next ``certify`` compares
its tallies with the previous lock's — all inputs pooled, and input by input — with Fisher's
exact test, so sampling noise is not reported as a change::

    all inputs: 60/60 → 40/60: worse beyond sampling noise (Fisher's exact, one-sided p = 1e-08)
    en-refund: 3/3 → 1/3, new failure: hallucinated key 'note'

Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from harness.console import clean
from harness.contracts.records import MAX_INPUT_FAILURES, CertificationRecord, InputTally
from harness.domain.clock import rfc3339
from harness.domain.words import counted

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


def fisher_one_sided(after: tuple[int, int], before: tuple[int, int]) -> tuple[float, float]:
    """Fisher's exact test on two pass tallies ``(passed, samples)``: ``(p_worse, p_better)``,
    the one-sided p-values that ``after``'s pass rate is below / above ``before``'s.

    Given both tallies' totals, the passes falling to ``after`` are hypergeometric under "no
    change"; ``p_worse = P(X <= passed_after)``, ``p_better = P(X >= passed_after)``.
    """
    (ap, an), (bp, bn) = after, before
    total, passes = an + bn, ap + bp
    if an <= 0 or bn <= 0:
        return 1.0, 1.0
    low, high = max(0, passes - bn), min(passes, an)
    ways = math.comb(total, an)
    weight = {x: math.comb(passes, x) * math.comb(total - passes, an - x)
              for x in range(low, high + 1)}
    worse = sum(w for x, w in weight.items() if x <= ap) / ways
    better = sum(w for x, w in weight.items() if x >= ap) / ways
    return min(1.0, worse), min(1.0, better)


def drift(
    previous: CertificationRecord | None, now: Mapping[str, InputTally], *,
    confidence: float = 0.95,
) -> dict[str, Any] | None:
    """What changed since ``previous`` (``None`` when there is nothing to compare).

    Raw tallies differ from one certification to the next by chance alone (3 samples against 20
    of the same provider), so every difference is tested: Fisher's exact test, one-sided, at
    ``1 - confidence`` — over all inputs pooled (``overall``), and per input with a Bonferroni
    correction for the number of inputs compared (``significant``). Only a significant change
    is reported as worse or better (see :func:`drift_items`).
    """
    if previous is None or not previous.inputs:
        return None
    alpha = round(1.0 - confidence, 10)
    compared = len(set(previous.inputs) & set(now))
    changes: list[dict[str, Any]] = []
    pooled = [0, 0, 0, 0]  # before passed, before samples, after passed, after samples
    for golden_id in sorted(set(previous.inputs) | set(now)):
        before, after = previous.inputs.get(golden_id), now.get(golden_id)
        if before is None or after is None:
            changes.append({
                "input": golden_id, "change": "added" if before is None else "removed",
            })
            continue
        b = (before.passed.get(ALL, 0), before.samples)
        a = (after.passed.get(ALL, 0), after.samples)
        pooled = [pooled[0] + b[0], pooled[1] + b[1], pooled[2] + a[0], pooled[3] + a[1]]
        b_rate = b[0] / b[1] if b[1] else 0.0
        a_rate = a[0] / a[1] if a[1] else 0.0
        new = [f for f in after.failures if f not in before.failures]
        gone = [f for f in before.failures if f not in after.failures]
        if a_rate == b_rate and not new:
            continue
        worse = a_rate < b_rate or (a_rate == b_rate and bool(new))
        p = fisher_one_sided(a, b)[0 if worse else 1]
        changes.append({
            "input": golden_id,
            "change": "worse" if worse else "better",
            "before": list(b),
            "after": list(a),
            "new_failures": new,
            "gone_failures": gone,
            "p": round(p, 6),
            "significant": p <= alpha / max(1, compared),
        })
    p_worse, p_better = fisher_one_sided((pooled[2], pooled[3]), (pooled[0], pooled[1]))
    overall = {
        "before": pooled[:2], "after": pooled[2:],
        "change": "worse" if p_worse <= alpha else "better" if p_better <= alpha else "none",
        "p_worse": round(p_worse, 6), "p_better": round(p_better, 6),
    }
    return {
        "since": rfc3339(previous.certified_at),
        "previous_verdict": previous.verdict,
        "previous_config_hash": previous.config_hash,
        "test": f"Fisher's exact, one-sided, alpha {alpha:g} (per input: Bonferroni over "
                f"{compared})",
        "overall": overall,
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
    if change.get("significant"):
        text += f" (significant on its own: p = {change['p']:.2g})"
    return text


def _describe_overall(overall: Mapping[str, Any]) -> str:
    (bp, bn), (ap, an) = overall["before"], overall["after"]
    head = f"all inputs: {bp}/{bn} → {ap}/{an}"
    if overall["change"] == "none":
        p = min(overall["p_worse"], overall["p_better"])
        return (f"{head}: no significant change (Fisher's exact, one-sided p = {p:.2g}): the "
                "differences per input are sampling noise")
    p = overall["p_worse" if overall["change"] == "worse" else "p_better"]
    return (f"{head}: {overall['change']} beyond sampling noise (Fisher's exact, one-sided "
            f"p = {p:.2g})")


def drift_items(record: CertificationRecord) -> list[dict[str, Any]]:
    """What to report of ``record``'s drift, each ``{input, before, after, change, text}``:
    the overall comparison, then the inputs that changed significantly on their own, and — when
    the overall change is significant — the inputs where it shows; an input added or removed.
    A difference within sampling noise is summed up by the overall line, not listed as worse.
    Empty when nothing differs."""
    drift_ = record.drift or {}
    changes = list(drift_.get("inputs", []))
    overall = drift_.get("overall")
    if overall is None:  # recorded before drift was tested: every raw change, as it was
        shown = changes
    else:
        shown = [c for c in changes if c["change"] in ("added", "removed") or c.get("significant")
                 or c["change"] == overall["change"]]
    shown.sort(key=lambda c: (c["change"] != "worse", c["change"] != "better", c["input"]))
    items = []
    if overall is not None and changes:
        items.append({"input": "all inputs", "before": "/".join(map(str, overall["before"])),
                      "after": "/".join(map(str, overall["after"])),
                      "change": overall["change"], "text": _describe_overall(overall)})
    for c in shown:
        items.append({"input": c["input"], "before": "/".join(map(str, c.get("before") or ())),
                      "after": "/".join(map(str, c.get("after") or ())), "change": c["change"],
                      "text": describe_change(c)})
    return items


def drift_lines(record: CertificationRecord, *, limit: int = 10) -> list[str]:
    """The drift of ``record`` in words (:func:`drift_items`); empty without drift."""
    items = drift_items(record)
    lines = [i["text"] for i in items[: limit + 1]]
    if len(items) > limit + 1:
        lines.append(f"… and {counted(len(items) - limit - 1, 'more input')}")
    return lines
