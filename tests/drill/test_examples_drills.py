"""`failover-harness drill` on the example services of examples/drill/, with their own profiles,
every drill at TRIALS intents, CONCURRENCY at once: the correct service passes everything; each
twin breaks its rule in EVERY trial of the drills that expose it, and no rule it does not
break. Held answers make the races happen every time (docs/drill.md, "Held answers"), and an
intent the load left without evidence is drilled again as a fresh one (docs/drill.md, "An intent
without evidence is drilled again"), so the expectations are exact, not floors: no unknown.

Paths, owners and bodies come from the profile files (the examples' API may change); settle is
kept short through the profile (``timeouts.settle_s``) except where a twin's bug needs the
default to show (a queue's redelivery)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.drill.causes import SLOW_LOOKS
from tests import _cli
from tests._servers import free_port
from tests.drill.conftest import EXAMPLES, ROOT, provider_env

# each run: a service start and 11 drills x 10 intents (10-30 s); the example drills run one at
# a time on one worker under xdist: each brings its own load (36 intents at once), and two at
# once on two cores would judge the machine's timing, not the service
pytestmark = [pytest.mark.slow, pytest.mark.one_worker("drill-examples")]

TRIALS = 10
#: intents at work at once, for the correct service and every twin alike: verdicts must not
#: depend on load (the no-abort twin holds on to its primary for 5 s, --abandon-after, so the
#: drill's release of the late answer always comes before it lets go, whatever the load)
CONCURRENCY = 36
SETTLE_S = 1.0  # the quiet period in these tests (a loaded 2-core machine keeps it)

CLI_TIMEOUT_S = 600
TIMEOUT_DRILLS = ("hang", "late", "double-click", "double-click-staggered", "re-click")
Rates = dict[str, dict[str, dict[str, int]]]  # drill -> promise -> {held, broken, unknown, …}


def profile_copy(tmp_path: Path, profile: str, settle: float | None) -> Path:
    """The example's profile, with ``timeouts.settle_s`` set unless it sets one itself."""
    data = yaml.safe_load((EXAMPLES / f"{profile}.profile.yaml").read_text("utf-8"))
    timeouts = data["drill"]["timeouts"]
    if settle is not None and "settle_s" not in timeouts:
        timeouts["settle_s"] = settle
    path = tmp_path / f"{profile}.profile.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def drill(start_service: Callable[..., Any], tmp_path: Path, script: str, profile: str,
          *args: str, reach: bool = True, drills: str = "all", trials: int = TRIALS,
          settle: float | None = SETTLE_S) -> tuple[int, Rates, str, Path]:
    """Start ``script`` with its providers at two free ports, drill it with the CLI (a
    process of its own: tests/_cli.py), and return (exit code, rates per drill and promise,
    output, results.json)."""
    primary, fallback = free_port(), free_port()
    env = provider_env(primary, fallback) if reach else provider_env(None, None)
    service = start_service(script, ["--timeout", "0.5", *args], env)
    report = tmp_path / f"report-{script}"
    cli_env = {**os.environ, "PRIMARY_PORT": str(primary), "FALLBACK_PORT": str(fallback),
               "PYTHONPATH": str(ROOT)}
    done = _cli.run(
        ["drill", "--target", service.url,
         "--target-profile", str(profile_copy(tmp_path, profile, settle)), "--drills", drills,
         "--trials", str(trials), "--concurrency", str(CONCURRENCY), "--report-dir",
         str(report)], env=cli_env, timeout=CLI_TIMEOUT_S, cwd=ROOT)
    results = report / "latest" / "results.json"
    rates: Rates = {}
    for event in json.loads(results.read_text("utf-8"))["events"]:
        if event["type"] == "drill_run":
            rates[event["drill"]] = {p["promise"]: p for p in event["promises"]}
    out = done.stdout + done.stderr
    if done.returncode == 3 or any(r["unknown"] for ps in rates.values() for r in ps.values()):
        # no evidence for some intent: what the service is doing now, for the failure's message
        # (a service seen frozen under load once: no answer, no thread running; docs/testing.md)
        out += "\nthe service after the drill: " + service.stacks()
    return done.returncode, rates, out, results


def broken(rates: Rates) -> dict[tuple[str, str], int]:
    return {(d, p): r["broken"] for d, promises in rates.items() for p, r in promises.items()
            if r["broken"]}


def test_the_correct_service_passes_every_drill(start_service: Callable[..., Any],
                                                 tmp_path: Path) -> None:
    # the primary is let go 5 s after its call (--abandon-after), so the late drill's release
    # of its answer, after the fallback won, never meets the service letting go at that instant
    # (a loaded machine once made the two coincide at the default 1.5 s: the answer was
    # written to a connection the service was closing, and no race could be recorded)
    code, rates, out, results = drill(start_service, tmp_path, "correct_service.py", "correct",
                                      "--abandon-after", "5")
    assert set(rates) == {"control", "hang", "late", "5xx", "overload-429", "overload-529",
                          "reset", "stream-cut", "double-click", "double-click-staggered",
                          "re-click"}
    assert broken(rates) == {}, out  # no false alarm, whatever the load
    # no unknown either: an intent the load left without evidence is drilled again (at most
    # twice, after the round; docs/drill.md), and the fresh intents were judged
    unknown = {(d, p): r["unknown"] for d, ps in rates.items() for p, r in ps.items()
               if r["unknown"]}
    assert (code, unknown) == (0, {}), (drilled_again(results), out)
    for name, promises in rates.items():  # every intent judged on what the drill is about
        for promise in ("one_job_per_intent", "one_winner_per_job", "within_hedge",
                        "billed_within_bound", "no_call_after_completion"):
            assert promises[promise]["held"] == TRIALS, (name, promise)
    for name in TIMEOUT_DRILLS:
        assert rates[name]["timeout_not_failure"]["held"] == TRIALS, name
    assert rates["stream-cut"]["cut_not_success"]["held"] == TRIALS


# twin: (script, profile, extra args, the profile's settle or None for its default,
#        {promise: drills where EVERY trial breaks it}, the promises its bug may break anywhere)
Twin = tuple[str, str, tuple[str, ...], float | None, dict[str, tuple[str, ...]], set[str]]
TWINS: dict[str, Twin] = {
    # the SDK re-sends a timed-out call: a new attempt while the first is unresolved
    "sdk-retries": ("sdk_retries_service.py", "sdk-retries", (), SETTLE_S, {
        "within_hedge": TIMEOUT_DRILLS,
        "billed_within_bound": ("hang", "reset", "stream-cut", "double-click",
                                "double-click-staggered", "re-click"),
        # its retries spend three timeouts before the fallback: beside two busy loops and
        # the other sessions (load 18) the job was still running at timeouts.job_s in 1-5 of
        # 10 intents of hang, late, the clicks, overload-529 (completed, truly broken)
    }, {"within_hedge", "billed_within_bound", "completed"}),
    "sdk-retry-unresolved": ("sdk_retries_service.py", "sdk-retry-unresolved", (), SETTLE_S, {
        "within_hedge": TIMEOUT_DRILLS,  # the bill (4) is declared: only the rule breaks
    }, {"within_hedge"}),
    "timeout-fails": ("timeout_fails_service.py", "timeout-fails", (), SETTLE_S, {
        "timeout_not_failure": TIMEOUT_DRILLS,
        # its late primary overwrites the fallback's result too, when its HTTP client has not
        # given up on the primary by the time the drill lets that answer go (no-abort is the
        # twin for that rule)
    }, {"timeout_not_failure", "one_winner_per_job", "no_call_after_completion",
        "completed"}),
    "brief-failed": ("brief_failed_service.py", "brief-failed", (), SETTLE_S, {
        "timeout_not_failure": TIMEOUT_DRILLS,  # held: the brief 'failed' is seen every time
        # (seen once in 10: a 429 left the job failed without the fallback: its own defect)
    }, {"timeout_not_failure", "completed"}),
    "no-abort": ("no_abort_service.py", "no-abort", ("--abandon-after", "5"), SETTLE_S, {
        "one_winner_per_job": ("late",),
        # the same bug wherever the primary's answer is slower than the timeout (a loaded
        # service: even in control): its hedge, never cancelled, runs after completion
    }, {"one_winner_per_job", "no_call_after_completion", "completed"}),
    "check-then-insert": ("correct_service.py", "check-then-insert",
                          ("--defect", "check-then-insert", "--check-gap", "1.0"), SETTLE_S, {
        # both submits from one barrier; the gap (the create's other work between its look-up
        # and its insert) is 1 s, not the default 0.25 s: a whole-suite run at load 10 once
        # delivered the second submit to the service more than 0.25 s after the first, so
        # the two never overlapped in it (one intent of 10 truly held)
        "one_job_per_intent": ("double-click",),
        # two jobs for one intent: two workers, two winners, calls after the first completed;
        # its check-then-insert gap (0.25 s in every create) slows the whole service: once in
        # 110 intents a job did not finish within the budget (completed)
    }, {"one_job_per_intent", "within_hedge", "billed_within_bound", "one_winner_per_job",
        "no_call_after_completion", "completed"}),
}


def _twin_or_skip(name: str) -> Twin:
    twin = TWINS[name]
    if not (EXAMPLES / f"{twin[1]}.profile.yaml").is_file():
        pytest.skip(f"examples/drill/{twin[1]}.profile.yaml is not in this checkout")
    return twin


@pytest.mark.parametrize("twin", sorted(TWINS))
def test_a_twin_breaks_its_rule_in_every_trial(start_service: Callable[..., Any],
                                               tmp_path: Path, twin: str) -> None:
    script, profile, args, settle, rules, may_break = _twin_or_skip(twin)
    code, rates, out, results = drill(start_service, tmp_path, script, profile, *args,
                                      settle=settle)
    assert_twin(code, rates, out, rules, may_break, results)


QUEUE_DRILLS = "control,hang,late,5xx"


@pytest.mark.parametrize(("script", "profile", "args", "rules", "may_break"), [
    ("redis_queue_service.py", "redis-queue", (), {
        "within_hedge": ("hang",),  # the redelivered run calls while the first is unresolved
    }, {"within_hedge", "billed_within_bound", "no_call_after_completion"}),
    # its lease and follow-up as test_examples_services.py runs it (a shorter --visibility)
    ("redis_redelivery_service.py", "redis-redelivery", ("--visibility", "1.0", "--followup",
                                                         "1.5"), {
        "one_winner_per_job": ("control", "hang", "late", "5xx"),  # the re-run overwrites
    }, {"one_winner_per_job", "within_hedge", "billed_within_bound",
        "no_call_after_completion"}),
])
def test_a_queue_twin_breaks_its_rule_in_every_trial(
        start_service: Callable[..., Any], tmp_path: Path, redis_url: str, script: str,
        profile: str, args: tuple[str, ...], rules: dict[str, tuple[str, ...]],
        may_break: set[str]) -> None:
    """Real Redis; settle at the profile's default (it covers the redelivery)."""
    if not (EXAMPLES / script).is_file():
        pytest.skip(f"examples/drill/{script} is not in this checkout")
    code, rates, out, results = drill(start_service, tmp_path, script, profile, "--redis",
                                      redis_url, *args, settle=None, drills=QUEUE_DRILLS)
    assert_twin(code, rates, out, rules, may_break, results)


def assert_twin(code: int, rates: Rates, out: str, rules: dict[str, tuple[str, ...]],
                may_break: set[str], results: Path) -> None:
    """The twin's rule broken in every trial of its drills, never held, never unknown (an intent
    the load left without evidence was drilled again, docs/drill.md) — but in an intent where
    the twin's bug broke another of its promises first (a broken intent is never drilled
    again), its rule may be unknown for the load's reason alone, the looks at the job too slow
    for the held answers (the finding's ``load``, docs/drill.md, "Held answers": seen beside
    other sessions' load on a slow machine; allowed because the machine's load is not the
    service's)."""
    assert code == 1, out
    found = broken(rates)
    intents = json.loads((results.parent / "drill.json").read_text("utf-8"))["drills"]
    for promise, drills in rules.items():
        for name in drills:
            rate = rates[name][promise]
            said = [{p: (f["verdict"], f.get("load", "")) for p, f in i["findings"].items()}
                    for i in intents[name]]
            caught = [s for s in said if s.get(promise, ("", ""))[0] == "unknown"
                      and s[promise][1] == SLOW_LOOKS
                      and "broken" in {s.get(p, ("", ""))[0] for p in may_break}]
            assert (rate["broken"], rate["held"], rate["unknown"]) == (
                TRIALS - len(caught), 0, len(caught)), (
                name, promise, rate, drilled_again(results), out)
            # the report gives the rate, in words (of the intents judged on it)
            assert re.search(f"broken in {rate['broken']} of {TRIALS} intents", out), out
    others = {key: n for key, n in found.items() if key[1] not in may_break}
    assert others == {}, out  # no other promise is (falsely) said to be broken


def drilled_again(results: Path) -> dict[str, list[dict[str, Any]]]:
    """Per drill, the intents drilled again and why (shown when an assertion fails)."""
    return {e["drill"]: e["drilled_again"]
            for e in json.loads(results.read_text("utf-8"))["events"]
            if e["type"] == "drill_run" and e.get("drilled_again")}


def test_a_service_that_never_calls_the_fakes_is_one_unknown(
        start_service: Callable[..., Any], tmp_path: Path) -> None:
    """OPENAI_BASE_URL and ANTHROPIC_BASE_URL unset: the service calls the SDKs' defaults (no
    network here), the fakes see nothing. One control intent shows it: exit 3, one
    diagnosis (with the fix naming the variables and the fakes' URLs, and the warning that
    the real providers may have been called), nothing else drilled."""
    code, _, out, results = drill(start_service, tmp_path, "correct_service.py", "correct",
                                  reach=False)
    assert code == 3, out
    events = [e for e in json.loads(results.read_text("utf-8"))["events"]
              if e["type"] == "drill_run"]
    assert [(e["drill"], e["verdict"], e["trials"]) for e in events] == [
        ("control", "unknown", 1)]
    [unknown] = events[0]["unknowns"]
    assert "OPENAI_BASE_URL=http://127.0.0.1:" in unknown["fix"]
    assert "ANTHROPIC_BASE_URL=" in unknown["fix"]
    assert "real money" in unknown["reason"]
    assert out.count("never called the fakes") <= 2, out  # one diagnosis (and its summary)
