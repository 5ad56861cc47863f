"""Idempotency layers written in another language, judged through profiles written from their
own documentation: every shipped and detection scenario, at its default trial counts.

- ``express-idempotency`` is express 4 behind express-idempotency 1.0.6 from npm (pinned in
  ``node/package-lock.json``), keys scoped by owner. It replays an unmarked 201, never expires a
  key, compares parsed bodies: its profile says ``replay: unmarked``, ``lease_s: none``,
  ``fingerprint: json``. Everything it can be asked passes — no VIOLATED because of
  ``created``, no UNKNOWN for want of a lease or a replay mark.
- ``node-layer`` is an order service on Node's http module whose layer is written in the style
  of @node-idempotency/core: JSON.stringify fingerprints (``parsed-json``), stored 5xx
  (``on_handler_error: final``), unmarked replays, no expiry. Everything passes.

And the defects these layers really have, each caught:

- keyed by the header alone (``-by-header``): Bob gets Alice's order — ``same_key_two_owners``
  is violated, on a service that has only jobs;
- express-idempotency with a handler that throws: express's own error handler answers with
  ``res.end``, the middleware never hears of it, the key stays "in progress" forever —
  ``handler_failure`` is violated (held forever, not unknown);
- a layer that never compares bodies (``fingerprint: none``): another body under a used key is
  answered with the first order — ``mismatched_key`` and ``mismatched_body`` are violated; the
  same intent respelled is still the same job.

No node (or no ``npm ci`` in ``tests/precision/node``): skipped, saying why; with
``HARNESS_REQUIRE_NODE=1`` (CI) that is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.scenarios.model import Scenario
from tests import _cli
from tests.precision.cases import cases
from tests.precision.conftest import DETECTION, SHIPPED, Fleet, Judge, evidence
from tests.precision.services_registry import NODE

NODE_DIR = Path(__file__).resolve().parent / "node"
OFFERED = {"jobs", "owners", "conflicts", "side_effects", "handler_faults"}
CLEAN = ("express-idempotency", "node-layer")
#: the defects the other variants really have: (service, scenario) → verdict; only these run
DEFECTS = {
    ("express-idempotency-by-header", "same_key_two_owners"): "broken",
    ("express-idempotency-by-header", "double_click"): "held",
    ("node-layer-by-header", "same_key_two_owners"): "broken",
    ("node-layer-by-header", "double_click"): "held",
    ("express-idempotency-raise", "handler_failure"): "broken",
    ("node-layer-none", "mismatched_key"): "broken",
    ("node-layer-none", "mismatched_body"): "broken",
    ("node-layer-none", "reordered_json_same_intent"): "held",
    ("node-layer-none", "double_click"): "held",
}


@pytest.fixture(scope="module", autouse=True)
def node_ready() -> None:
    """Node and the npm packages are there; else skip (fail in CI: HARNESS_REQUIRE_NODE=1)."""
    missing = None
    if shutil.which("node") is None:
        missing = "node is not installed"
    elif not (NODE_DIR / "node_modules" / "express-idempotency").is_dir():
        missing = f"the npm packages are not installed: run npm ci in {NODE_DIR}"
    if missing is None:
        return
    if os.environ.get("HARNESS_REQUIRE_NODE") == "1":
        pytest.fail(f"HARNESS_REQUIRE_NODE=1 but {missing}")
    pytest.skip(f"the Node services cannot run: {missing}")


def expected(service: str, scenario: Scenario) -> str:
    if (service, scenario.name) in DEFECTS:
        return DEFECTS[(service, scenario.name)]
    if scenario.requires - OFFERED:
        return "not_applicable"  # attempts, timeouts, hedge or replicas: jobs-only services
    return "held"


def _selected(service: str, scenario: str) -> bool:
    return service in CLEAN or (service, scenario) in DEFECTS


@pytest.mark.parametrize(("service", "scenario"), cases(
    NODE, [*SHIPPED, *DETECTION], {}, skip=lambda sv, sc: not _selected(sv, sc)))
def test_node_layer_gets_the_right_verdict(service: str, scenario: str, fleet: Fleet,
                                           scenarios: dict[str, Scenario],
                                           judge: Judge) -> None:
    want = expected(service, scenarios[scenario])
    result = judge(fleet.get(service), scenarios[scenario], profile=True)
    assert result.status == want, f"expected {want}\n{evidence(result)}"


def test_no_clean_verdict_rests_on_created_or_a_lease(fleet: Fleet,
                                                      scenarios: dict[str, Scenario],
                                                      judge: Judge) -> None:
    """The scenarios that expect ``created:`` pass on a layer replaying an unmarked 201, and
    the expectation is recorded as not judged (the profile makes it unobservable)."""
    result = judge(fleet.get("express-idempotency"), scenarios["mismatched_key"], profile=True)
    assert result.status == "held", evidence(result)
    creates = [op for run in result.all_runs for op in run.history
               if op.f == "create" and op.type == "invoke"]
    assert creates and all("created" in op.value.get("unmapped", ["created"]) for op in creates
                           if "expect" in op.value)
    assert not any("created" in (op.value.get("expect") or {}) for op in creates)


def test_a_key_held_forever_is_said_so(fleet: Fleet, scenarios: dict[str, Scenario],
                                       judge: Judge) -> None:
    result = judge(fleet.get("express-idempotency-raise"), scenarios["handler_failure"],
                   profile=True, trials=1)
    messages = [v for run in result.all_runs for c in run.checks for v in c.violations]
    assert any("held forever" in v.message for v in messages), evidence(result)


LOCAL_SCENARIO = """name: my_own_retry
actors: [alice]
intents:
  a: {contract: ticket_triage, input: {ticket: "mine"}}
steps:
  - {at: 0, create: {key: k-1, intent: a}, save: job, expect: {created: true}}
  - {at: 1, create: {key: k-1, intent: a}, expect: {reuse_of: job}}
checkers: [one_job_per_intent, duplicates_get_same_job]
"""


def _check(service: str, fleet: Fleet, tokens_file: Path,
           folder: Path) -> subprocess.CompletedProcess[str]:
    """``failover-harness check --target`` as a user runs it, from a folder holding a
    scenarios/ folder of their own."""
    running = fleet.get(service)
    (folder / "scenarios").mkdir()
    (folder / "scenarios" / "mine.yaml").write_text(LOCAL_SCENARIO, encoding="utf-8")
    return _cli.run(
        ["check", "--target", running.url,
         "--target-profile", str(running.profile), "--tokens-file", str(tokens_file),
         "--no-certify", "--report-dir", str(folder / "reports")],
        timeout=600, cwd=folder, env={**os.environ, **running.env})


def test_check_target_on_a_clean_layer_passes_with_every_suite(
        fleet: Fleet, tokens_file: Path, tmp_path: Path) -> None:
    done = _check("express-idempotency", fleet, tokens_file, tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert re.search(r"suites: shipped \(\d+\), detection \(\d+\), local scenarios/ \(1\)", out)
    assert "replay: unmarked" in out  # the profile's warning names what it turns off
    assert not re.search(r"^(VIOLATED|UNKNOWN)\b", out, re.M), out[-4000:]


@pytest.mark.slow
def test_check_target_on_a_header_keyed_layer_reports_only_the_owner_leak(
        fleet: Fleet, tokens_file: Path, tmp_path: Path) -> None:
    done = _check("node-layer-by-header", fleet, tokens_file, tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-4000:]
    violated = re.findall(r"^VIOLATED\s+(\S+)", out, re.M)
    assert violated == ["same_key_two_owners"], out[-4000:]
    assert not re.search(r"^UNKNOWN\b", out, re.M), out[-4000:]
