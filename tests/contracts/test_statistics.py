"""Three-state statistical verdicts: the maths, and what certify and gate make of them."""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Mapping
from typing import Any

import pytest

from harness.contracts import exchange
from harness.contracts.drift import drift_lines
from harness.contracts.stats import (
    RateVerdict,
    binom_sf,
    clopper_pearson,
    confidence_sequence,
    decide,
    log_mixture_evidence,
    more_samples_to_decide,
)
from tests.contracts.conftest import Project, provider


def _sf(k: int, n: int, p: float) -> float:
    return math.fsum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


@pytest.mark.parametrize(("k", "n", "p"), [(58, 60, 0.9), (5, 10, 0.3), (1, 30, 0.01),
                                           (30, 30, 0.95), (0, 12, 0.5), (150, 200, 0.8)])
def test_the_binomial_tail_matches_the_exact_sum(k: int, n: int, p: float) -> None:
    assert binom_sf(k, n, p) == pytest.approx(_sf(k, n, p), rel=1e-9, abs=1e-300)


def test_clopper_pearson_bounds_solve_their_defining_equations() -> None:
    lower, upper = clopper_pearson(58, 60, 0.95)
    assert _sf(58, 60, lower) == pytest.approx(0.05, rel=1e-6)
    assert 1 - _sf(59, 60, upper) == pytest.approx(0.05, rel=1e-6)  # P(X <= 58) at upper
    assert clopper_pearson(60, 60, 0.95) == (pytest.approx(0.05 ** (1 / 60)), 1.0)
    assert clopper_pearson(0, 60, 0.95)[0] == 0.0


@pytest.mark.parametrize(
    ("passed", "decision"),
    [(60, "held"), (59, "held"), (58, "unknown"), (54, "unknown"), (48, "broken")],
)
def test_sixty_samples_at_a_90_percent_threshold(passed: int, decision: str) -> None:
    assert decide(passed, 60, 0.9, 0.95, "clopper-pearson") == decision


def test_one_failure_in_ten_is_not_eligible_and_no_sample_count_would_make_it() -> None:
    verdict = RateVerdict.judge(54, 60, 0.9, 0.95, "clopper-pearson")
    assert verdict.decision == "unknown"
    assert verdict.lower == pytest.approx(0.812, abs=0.001)
    assert verdict.more_samples is None
    assert "no number of samples would decide" in verdict.describe()


def test_undecided_says_how_many_more_samples_would_decide_at_the_observed_rate() -> None:
    verdict = RateVerdict.judge(58, 60, 0.9, 0.95, "mixture-sprt")
    assert verdict.decision == "unknown" and verdict.more_samples == 60
    assert "60 more samples would decide at the observed rate" in verdict.describe()
    n = 60 + verdict.more_samples
    assert decide(58 / 60 * n, n, 0.9, 0.95, "mixture-sprt") == "held"
    assert decide(58 / 60 * (n - 1), n - 1, 0.9, 0.95, "mixture-sprt") == "unknown"
    assert more_samples_to_decide(58, 60, 0.9, 0.95, "clopper-pearson") == 2


def test_the_mixture_evidence_is_the_closed_form_of_the_integral() -> None:
    k, n, theta = 17, 20, 0.7
    steps = 200_000  # midpoint rule over (θ, 1] and [0, θ)

    def ratio(q: float) -> float:
        return (q / theta) ** k * ((1 - q) / (1 - theta)) ** (n - k)

    plus = sum(ratio(theta + (i + 0.5) * (1 - theta) / steps) for i in range(steps)) / steps
    minus = sum(ratio((i + 0.5) * theta / steps) for i in range(steps)) / steps
    got_plus, got_minus = log_mixture_evidence(k, n, theta)
    assert math.exp(got_plus) == pytest.approx(plus, rel=1e-6)
    assert math.exp(got_minus) == pytest.approx(minus, rel=1e-6)


def test_the_confidence_sequence_is_wider_than_the_fixed_interval_and_agrees_with_decide() -> None:
    cs = confidence_sequence(116, 120, 0.95)
    cp = clopper_pearson(116, 120, 0.95)
    assert cs[0] < cp[0] and cs[1] > cp[1]
    assert (cs[0] >= 0.9) == (decide(116, 120, 0.9, 0.95, "mixture-sprt") == "held")


def test_the_adaptive_rule_keeps_its_error_bound_under_optional_stopping() -> None:
    # A provider exactly at the threshold, looked at after every round of 20 for 30 rounds:
    # the mixture rule may call it eligible at most alpha of the time; repeated fixed-sample
    # Clopper–Pearson looks at the same data would exceed alpha (that is why it is not used).
    rng = random.Random(15)
    trials, wrong_sprt, wrong_naive = 400, 0, 0
    for _ in range(trials):
        passed = samples = 0
        sprt = naive = False
        for _round in range(30):
            passed += sum(rng.random() < 0.9 for _ in range(20))
            samples += 20
            sprt = sprt or decide(passed, samples, 0.9, 0.95, "mixture-sprt") == "held"
            naive = naive or decide(passed, samples, 0.9, 0.95, "clopper-pearson") == "held"
        wrong_sprt += sprt
        wrong_naive += naive
    assert wrong_sprt / trials <= 0.05
    assert wrong_naive / trials > 0.05


# -- through certify and gate ---------------------------------------------------------------------


def flaky_anthropic(monkeypatch: pytest.MonkeyPatch, every: int, *,
                    per_input: bool = False) -> dict[str, int]:
    """Fake anthropic-messages providers add a hallucinated key to every ``every``-th answer
    (``per_input``: to every ``every``-th answer of each input, counted from a place fixed by
    the input's text, so which inputs draw a broken answer does not depend on the order the
    concurrent samples reach the fake)."""
    counts = {"calls": 0, "broken": 0}
    each: dict[str, int] = {}
    real = exchange.fake_transport

    def patched(kind: str, behaviour: str, answer: Any = None, **kw: Any) -> Any:
        if kind != "anthropic-messages" or answer is None:
            return real(kind, behaviour, answer=answer, **kw)

        def flaky(system: str | None, user: str, schema: Mapping[str, Any]) -> dict:
            counts["calls"] += 1
            out = answer(system, user, schema)
            if per_input:
                start = int(hashlib.sha256(user.encode()).hexdigest(), 16) % every
                each[user] = each.get(user, start) + 1
            if (each[user] if per_input else counts["calls"]) % every == 0:
                counts["broken"] += 1
                return {**out, "note": "an extra key, once in a while"}
            return out

        return real(kind, behaviour, answer=flaky, **kw)

    monkeypatch.setattr(exchange, "fake_transport", patched)
    return counts


def _chain(project: Project) -> None:
    project.write_providers({
        "primary": provider(),
        "fallback": provider(kind="anthropic-messages"),
    })


def test_a_fallback_failing_one_answer_in_ten_is_not_eligible(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    counts = flaky_anthropic(monkeypatch, 10)
    _chain(project)
    assert project.cli("certify", "--no-progress") == 3  # unknown: not eligible, not failed
    assert counts == {"calls": 60, "broken": 6}
    record = project.workspace().lock.get("fallback", "ticket_triage")
    assert record is not None and record.verdict == "undecided"
    schema = next(c for c in record.checks if c.name == "schema")
    assert schema.decision == "unknown" and schema.stats is not None
    assert (schema.stats.passed, schema.stats.samples) == (54, 60)
    assert schema.stats.lower < 0.9 <= schema.stats.upper
    assert schema.figures["pass_k"]["k"] == 3
    out = capsys.readouterr().out
    assert "undecided" in out and "--adaptive" in out
    assert project.cli("gate") == 3  # the runner does not fail over to it either
    ok, why = project.workspace().eligibility().is_eligible("fallback", "ticket_triage")
    assert not ok and why.startswith("undecided")


def test_one_failure_in_thirty_is_undecided_at_60_samples_and_decided_by_adaptive(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    flaky_anthropic(monkeypatch, 30)
    _chain(project)
    assert project.cli("certify", "--no-progress") == 3
    record = project.workspace().lock.get("fallback", "ticket_triage")
    assert record is not None and record.verdict == "undecided"
    assert record.sampling is not None and record.sampling.calls == 60
    assert "more samples would decide at the observed rate" in record.why()
    capsys.readouterr()

    assert project.cli("certify", "--no-progress", "--adaptive", "--json") == 0
    document = json.loads(capsys.readouterr().out)
    assert document["exit_code"] == 0
    record = project.workspace().lock.get("fallback", "ticket_triage")
    assert record is not None and record.verdict == "eligible", record.why()
    sampling = record.sampling
    assert sampling is not None and sampling.adaptive and sampling.rule == "mixture-sprt"
    assert 60 < sampling.calls <= 400 and sampling.calls % 20 == 0  # whole rounds, in budget
    schema = next(c for c in record.checks if c.name == "schema")
    assert schema.stats is not None and schema.stats.lower >= 0.9
    assert project.cli("gate") == 0


def test_adaptive_stops_a_clearly_bad_provider_after_one_round(project: Project) -> None:
    project.write_providers({"primary": provider(), "proser": provider("prose")})
    run = project.certify(adaptive=True)
    records = {r.provider: r for r in run.records}
    assert records["proser"].verdict == "ineligible"
    assert records["proser"].sampling is not None and records["proser"].sampling.calls == 20
    assert records["primary"].verdict == "eligible"
    assert records["primary"].sampling is not None and records["primary"].sampling.calls == 60


def test_the_lock_records_k_the_bounds_and_the_rule(project: Project) -> None:
    _chain(project)
    assert project.cli("certify", "--no-progress") == 0
    data = json.loads(project.lock_path.read_text("utf-8"))
    assert data["lock_version"] == 2
    record = next(r for r in data["certifications"] if r["provider"] == "fallback")
    assert record["verdict"] == "eligible"
    assert record["provenance"] == "fake provider (answers from the golden file)"
    assert record["sampling"] == {
        "rule": "clopper-pearson", "confidence": 0.95, "k": 3, "rounds": 3, "calls": 60,
        "adaptive": False, "budget": None, "seeded": False,
    }
    schema = next(c for c in record["checks"] if c["name"] == "schema")
    assert schema["decision"] == "pass"
    assert schema["stats"]["lower"] == pytest.approx(0.9513, abs=1e-4)
    assert schema["stats"]["rule"] == "clopper-pearson"
    assert record["inputs"]["en-outage"] == {"samples": 3, "schema": 3, "round_trip": 3,
                                             "all": 3}


def test_recertifying_reports_drift_per_golden_input(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _chain(project)
    assert project.cli("certify", "--no-progress") == 0
    assert project.workspace().lock.get("fallback", "ticket_triage").drift is None  # type: ignore[union-attr]
    capsys.readouterr()
    flaky_anthropic(monkeypatch, 3)  # now every third answer carries an extra key
    assert project.cli("certify", "--no-progress") == 1
    out = capsys.readouterr().out
    record = project.workspace().lock.get("fallback", "ticket_triage")
    assert record is not None and record.drift is not None
    assert record.drift["previous_verdict"] == "eligible"
    worse = [c for c in record.drift["inputs"] if c["change"] == "worse"]
    assert worse and all(c["before"] == [3, 3] and c["after"][0] < 3 for c in worse)
    assert sum(3 - c["after"][0] for c in worse) == 20  # 60 answers, every third broken
    assert all(c["new_failures"] == ["hallucinated key 'note'"] for c in worse)
    first = worse[0]
    line = f"{first['input']}: 3/3 → {first['after'][0]}/3, new failure: hallucinated key 'note'"
    assert "drift since" in out and line in out
    junit = (project.root / "reports" / "latest" / "junit.xml").read_text("utf-8")
    assert line in junit  # (and in index.html, under "drift since")
    primary = project.workspace().lock.get("primary", "ticket_triage")
    assert primary is not None and primary.drift is not None  # compared, nothing changed
    assert primary.drift["inputs"] == [] and primary.drift["overall"]["change"] == "none"
    assert primary.drift["previous_config_hash"] == primary.config_hash
    assert drift_lines(primary) == []  # nothing differs: nothing to say
    # the fallback's change is beyond sampling noise (60/60 → 40/60): said first, then where
    overall = record.drift["overall"]
    assert (overall["before"], overall["after"], overall["change"]) == ([60, 60], [40, 60],
                                                                        "worse")
    assert "all inputs: 60/60 → 40/60: worse beyond sampling noise (Fisher's exact" in out


def test_drift_does_not_call_sampling_noise_a_change(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same provider (1 answer in 10 broken) certified with 3, then 20 samples per input:
    its per-input tallies differ (3/3 → 18/20) by chance alone. Nothing got worse (QA Q25).
    Each input draws its own tenth answers (a count shared by the concurrent samples once gave
    one input 0 of 3 and then 18 of 20: a real change, by the threads' order)."""
    flaky_anthropic(monkeypatch, 10, per_input=True)
    _chain(project)
    assert project.cli("certify", "--no-progress") == 3
    capsys.readouterr()
    assert project.cli("certify", "--no-progress", "--adaptive") == 3
    out = capsys.readouterr().out
    record = project.workspace().lock.get("fallback", "ticket_triage")
    assert record is not None and record.drift is not None
    assert any(c["change"] == "worse" for c in record.drift["inputs"])  # the raw tallies differ…
    assert record.drift["overall"]["change"] == "none"  # …within sampling noise
    assert not any(c["significant"] for c in record.drift["inputs"] if "significant" in c)
    lines = drift_lines(record)
    assert len(lines) == 1 and "no significant change (Fisher's exact" in lines[0], lines
    assert lines[0] in out
    assert "new failure" not in out and "→ 1" not in out.split("drift since")[-1].split(
        "all inputs")[0]
    summary = (project.root / "reports" / "latest" / "summary.md").read_text("utf-8")
    assert "no significant change" in summary and "new failure" not in summary


def test_an_adaptive_run_that_spent_its_budget_does_not_advise_adaptive_again(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """1 answer in 10 under a 0.9 threshold: --adaptive spends the budget undecided; the fix
    says why more of the same will not help (it used to repeat '… --adaptive')."""
    flaky_anthropic(monkeypatch, 10)
    _chain(project)
    assert project.cli("certify", "--no-progress", "--adaptive") == 3
    out = capsys.readouterr().out
    assert "sample until decided" not in out
    assert "--adaptive spent the contract's budget (400 calls)" in out
    assert "make the provider pass more reliably" in out or "raise certification.budget" in out
    assert project.cli("gate") == 3
    assert "--adaptive spent the contract's budget" in capsys.readouterr().out
