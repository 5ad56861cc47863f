"""The scripted-outcomes checker: what the scenario says must happen, happens.

The safety checkers pass a store that refuses everything; ``expect:`` on a step (recorded in
the invoke) says what a correct store answers, e.g. ``{created: true}``, ``{outcome: won}`` or
``{error: attempt_in_flight}``. ``count`` compares the length of a listed collection.

Expectations on a field the target's profile does not map were left out by the runner (the
invoke lists them under ``unmapped``): the target promises nothing about them.

Expectations are relative wherever API.md leaves a value to the implementation (the oracle rule):
``version: unchanged`` (the same version this job last showed), ``version: rose`` (above it; also
for ``read_version``); ``reuse_of: job`` on a create (the key of ``job`` sent again: a replay of
``job`` when the target's fingerprint rule makes it the same intent, the key-reused refusal when
it does not). An absolute version is compared as written (the loader warns about it).

No verdict without evidence: once a write on a job (an attempt's start or event) got no answer,
what the service did with it is unknown, and so is what the job should show afterwards. A later
expectation on that job that does not hold is reported unknown, naming the unanswered request —
never a broken promise built on a request the service may never have seen.
"""

from __future__ import annotations

from typing import Any

from harness.scenarios.checkers.base import EvidenceNeed, Findings, checker, jobs, ok
from harness.scenarios.history import Pair

RELATIVE = ("unchanged", "rose")
VERSIONED = ("version", "read_version")
#: writes whose effect on their job is unknown when the service never answered them
WRITES = ("start", "dispatched", "succeeded", "failed", "timed_out", "cancelled")
UNANSWERED_FIX = ("the request got no answer (the op's detail says what the client saw: a "
                  "closed connection, a timeout): see the service's log, and run again")


def _unobservable(expect: dict[str, Any], pair: Pair) -> list[str]:
    """Expected fields the target never answers (e.g. a profile without versions)."""
    if pair.type != "ok":
        return []
    return [k for k in expect if k not in ("error", "count", "reuse_of") and k not in pair.value]


def _got(pair: Pair) -> str:
    value = pair.value
    return f"{value.get('status')} {value.get('error')}" if pair.type == "fail" else "success"


def _mismatches(expect: dict[str, Any], pair: Pair, versions: dict[str, Any]) -> list[str]:
    wanted = dict(expect)
    error = wanted.pop("error", None)
    value = pair.value
    if error is not None:
        if pair.type != "fail" or value.get("error") != error:
            return [f"expected {error}, got {_got(pair)}"]
    elif pair.type != "ok":
        return [f"expected success, got {_got(pair)}"]
    problems = []
    count = wanted.pop("count", None)
    if count is not None:
        listed = next((v for v in value.values() if isinstance(v, list)), None)
        if listed is None or len(listed) != count:
            problems.append(f"expected {count} listed, got "
                            f"{len(listed) if listed is not None else 'no list'}")
    for key, want in wanted.items():
        if key not in value:
            continue
        if key in VERSIONED and want in RELATIVE:
            before = versions.get(key)
            got = value[key]
            if before is None or not isinstance(got, int):
                continue  # no earlier version to compare with: reported unknown
            if want == "unchanged" and got != before:
                problems.append(f"expected {key}: unchanged ({before}), got {got}")
            elif want == "rose" and not got > before:
                problems.append(f"expected {key}: rose (above {before}), got {got}")
        elif value[key] != want:
            problems.append(f"expected {key}: {want!r}, got {value.get(key)!r}")
    return problems


def _job_of(pair: Pair) -> str | None:
    job = pair.value.get("job") if pair.invoke.f == "create" else pair.invoke.value.get("job")
    return str(job) if job is not None else None


def _attempt_jobs(items: list[Pair]) -> dict[str, str]:
    """Attempt name → the job its start named."""
    return {str(p.invoke.value["attempt"]): str(p.invoke.value.get("job")) for p in items
            if p.invoke.f == "start" and p.invoke.value.get("attempt") is not None}


def _unanswered_writes(items: list[Pair], jobs_of: dict[str, str]) -> dict[str, Pair]:
    """Job → the first write on it (an attempt's start or event) that got no answer."""
    found: dict[str, Pair] = {}
    for pair in items:
        if pair.type == "info" and pair.invoke.f in WRITES:
            job = _job_touched(pair, jobs_of)
            if job is not None:
                found.setdefault(job, pair)
    return found


def _job_touched(pair: Pair, jobs_of: dict[str, str]) -> str | None:
    """The job an op reads or writes (through its attempt for an event)."""
    job = _job_of(pair)
    if job is None and pair.invoke.value.get("attempt") is not None:
        job = jobs_of.get(str(pair.invoke.value["attempt"]))
    return job


def _last_versions(items: list[Pair], pair: Pair) -> dict[str, Any]:
    """The version the op's job last showed before ``pair`` was invoked (create, read, or an
    attempt's read_version), for both ``version`` and ``read_version`` expectations."""
    job = _job_of(pair)
    last: Any = None
    done = [p for p in items if ok(p) and p.completion is not None
            and p.completion.index < pair.invoke.index]
    for other in sorted(done, key=lambda p: p.completion.index if p.completion else 0):
        if other.invoke.f in ("create", "read") and _job_of(other) == job \
                and isinstance(other.value.get("version"), int):
            last = other.value["version"]
        elif other.invoke.f == "start" and other.invoke.value.get("job") == job \
                and isinstance(other.value.get("read_version"), int):
            last = other.value["read_version"]
    return {"version": last, "read_version": last} if last is not None else {}


def _reuse(expect: dict[str, Any], pair: Pair, items: list[Pair],
           found: Findings) -> dict[str, Any] | None:
    """``reuse_of: job`` as what it means for this target: a replay of ``job`` when this body is
    the same intent under the target's fingerprint rule, else the key-reused refusal. None when
    ``job`` was never made (the run's unknowns say why)."""
    alias = expect.get("reuse_of")
    made = jobs(items).get(str(alias))
    if made is None:
        found.unknown(f"op {pair.invoke.index}: expects a reuse of job {alias}, which was never "
                      "made")
        return None
    rest = {k: v for k, v in expect.items() if k != "reuse_of"}
    if pair.invoke.value.get("fingerprint") == made.fingerprint:
        # "created: false" only where creation is observable (not with unmarked replays)
        seen = {"created": False} if "created" in pair.value else {}
        return {**seen, "job": alias, **rest}
    return {"error": "idempotency_key_reused", **rest}


@checker("the scripted outcomes happen: every step's expect: holds (refusing everything is not "
         "safe, it is broken)",
         EvidenceNeed("step with expect: answered",
                  lambda items: sum(1 for p in items if p.invoke.value.get("expect") is not None
                                    and p.type != "info")))
def scripted_outcomes(items: list[Pair], found: Findings) -> None:
    jobs_of = _attempt_jobs(items)
    lost = _unanswered_writes(items, jobs_of)
    for pair in items:
        expect = pair.invoke.value.get("expect")
        if expect is None:
            continue
        if pair.type == "info":
            found.unknown(f"op {pair.invoke.index} ({pair.invoke.f}) got no answer")
            continue
        if "reuse_of" in expect:
            expect = _reuse(expect, pair, items, found)
            if expect is None:
                continue
        versions = _last_versions(items, pair)
        blind = lost.get(_job_touched(pair, jobs_of) or "")
        if blind is not None and blind.invoke.index >= pair.invoke.index:
            blind = None
        for problem in _mismatches(expect, pair, versions):
            if blind is None:
                found.violation(f"{pair.invoke.process} {pair.invoke.f}: {problem}", pair)
                continue
            found.unknown(f"op {pair.invoke.index} ({pair.invoke.process} {pair.invoke.f}): "
                          f"{problem}, not judged: op {blind.invoke.index} "
                          f"({blind.invoke.process} {blind.invoke.f}) on the same job got no "
                          "answer before it, so what the job should show is unknown",
                          UNANSWERED_FIX)
        for key in _unobservable(expect, pair):
            found.unknown(f"op {pair.invoke.index} ({pair.invoke.f}): the target does not "
                          f"answer {key!r}", "map the field in the target profile's operations "
                          "(fields:), or drop the expectation")
        for key in VERSIONED:
            if expect.get(key) in RELATIVE and key in pair.value and pair.type == "ok" \
                    and key not in versions:
                found.unknown(f"op {pair.invoke.index} ({pair.invoke.f}): expects {key}: "
                              f"{expect[key]}, but the job showed no version before it",
                              "read the job (or create it) before the step that compares")


