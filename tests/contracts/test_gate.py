"""`gate`: 0 certified, 1 failed, 3 missing / stale / expired, 2 bad input — each with its fix."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import yaml

from harness.domain.clock import rfc3339
from tests.contracts.conftest import provider


def _chain(project, **overrides) -> None:
    project.write_providers({
        "primary": provider(**overrides.get("primary", {})),
        "fallback": provider(kind="anthropic-messages", **overrides.get("fallback", {})),
        "standby": provider("prose"),
    }, [("primary", "auto"), ("fallback", "auto"), ("standby", "manual")])


def test_gate_passes_when_every_auto_link_is_certified(project, capsys) -> None:
    _chain(project)
    assert project.cli("certify", "--no-progress") == 0  # the prose standby is manual
    capsys.readouterr()
    assert project.cli("gate") == 0
    assert "ok — 2 auto links certified" in capsys.readouterr().out


def test_gate_without_certifications_is_unknown_not_failed(project, capsys) -> None:
    _chain(project)
    assert project.cli("gate") == 3
    out = capsys.readouterr().out
    assert "MISSING: provider 'primary', contract 'ticket_triage': no certification" in out
    assert "MISSING: provider 'fallback'" in out
    assert "fix: run: failover-harness certify --providers" in out
    assert "--provider fallback --contract ticket_triage" in out
    assert "standby" not in out  # manual links are not gated


def test_raising_a_certified_providers_temperature_makes_it_stale(project, capsys) -> None:
    _chain(project)
    project.cli("certify", "--no-progress")
    _chain(project, fallback={"temperature": 0.25})
    capsys.readouterr()
    assert project.cli("gate") == 3
    out = capsys.readouterr().out
    assert "STALE: provider 'fallback', contract 'ticket_triage'" in out
    assert "temperature 0.0 → 0.25" in out
    assert "re-certify at the new configuration: failover-harness certify" in out
    assert "primary" not in out.split("STALE")[0]


def test_changing_the_contract_makes_every_link_stale(project, capsys) -> None:
    _chain(project)
    project.cli("certify", "--no-progress")
    golden = project.contract / "golden" / "en-outage.yaml"
    case = yaml.safe_load(golden.read_text(encoding="utf-8"))
    case["expected"]["confidence"] = 0.9
    golden.write_text(yaml.safe_dump(case, allow_unicode=True), encoding="utf-8")
    capsys.readouterr()
    assert project.cli("gate") == 3
    out = capsys.readouterr().out
    assert out.count("STALE") == 2
    # which file changed, for the reviewer of the pull request that changed it (QA Q31)
    assert ("the contract changed since the certification (same version, different content: "
            "golden/en-outage.yaml changed)") in out
    schema = project.contract / "schema.json"
    schema.write_text(schema.read_text("utf-8").replace('"maxItems": 5', '"maxItems": 6'), "utf-8")
    (project.contract / "golden" / "en-new.yaml").write_text(
        golden.read_text("utf-8").replace("en-outage", "en-new"), encoding="utf-8")
    capsys.readouterr()
    assert project.cli("gate") == 3
    out = capsys.readouterr().out
    assert ("(same version, different content: golden/en-new.yaml added, "
            "golden/en-outage.yaml changed, schema.json changed)") in out


def test_a_comment_in_the_contract_changes_nothing(project) -> None:
    _chain(project)
    project.cli("certify", "--no-progress")
    path = project.contract / "contract.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "\n# reviewed\n", encoding="utf-8")
    assert project.cli("gate") == 0


def test_an_expired_certification_is_unknown(project, capsys) -> None:
    _chain(project)
    project.cli("certify", "--no-progress")
    data = json.loads(project.lock_path.read_text(encoding="utf-8"))
    for record in data["certifications"]:
        if record["provider"] == "fallback":
            record["expires_at"] = rfc3339(datetime.now(UTC) - timedelta(minutes=1))
    project.lock_path.write_text(json.dumps(data), encoding="utf-8")
    capsys.readouterr()
    assert project.cli("gate") == 3
    out = capsys.readouterr().out
    assert "EXPIRED: provider 'fallback', contract 'ticket_triage': " in out
    assert "the certification expired at" in out


def test_an_ineligible_auto_link_fails_the_gate_even_beside_unknown_ones(project, capsys) -> None:
    project.write_providers({"primary": provider(), "bad": provider("wrong-types")})
    project.cli("certify", "--no-progress")
    project.write_providers(
        {"primary": provider(temperature=0.1), "bad": provider("wrong-types")}
    )  # primary now stale (3), bad failed (1): failed wins
    capsys.readouterr()
    assert project.cli("gate") == 1
    out = capsys.readouterr().out
    assert "FAILED: provider 'bad', contract 'ticket_triage': " in out
    assert "certified ineligible (live): schema: JSON Schema" in out
    assert "set this link to 'failover: manual'" in out
    assert "STALE: provider 'primary'" in out


def test_bad_input_is_exit_2_with_file_and_fix(project, capsys) -> None:
    _chain(project)
    project.lock_path.write_text('{"lock_version": 1, "certifications": [', encoding="utf-8")
    assert project.cli("gate") == 2
    err = capsys.readouterr().err
    assert "providers.lock.json:1: not valid JSON" in err and "fix:" in err
    project.lock_path.unlink()
    text = project.providers_path.read_text(encoding="utf-8").replace("ticket_triage:", "invoices:")
    project.providers_path.write_text(text, encoding="utf-8")
    assert project.cli("gate") == 2
    err = capsys.readouterr().err
    assert "the chain for contract 'invoices' has no contract" in err
    assert "providers.yaml:" in err and "(chains.invoices)" in err
    assert project.cli("gate", "--contracts", str(project.root / "nowhere")) == 2
    assert "contracts folder not found" in capsys.readouterr().err


def test_eligibility_for_the_failover_runner_reads_the_same_verdicts(project) -> None:
    _chain(project)
    project.cli("certify", "--no-progress")
    eligibility = project.workspace().eligibility()
    assert eligibility.is_eligible("fallback", "ticket_triage")[0] is True
    ok, why = eligibility.is_eligible("standby", "ticket_triage")
    assert not ok and why.startswith("failed: certified ineligible")
    _chain(project, fallback={"max_output_tokens": 256})
    ok, why = project.workspace().eligibility().is_eligible("fallback", "ticket_triage")
    assert not ok and why.startswith("stale:") and "max_output_tokens 512 → 256" in why
    ok, why = project.workspace().eligibility().is_eligible("fallback", "invoices")
    assert not ok and "not loaded" in why
