"""Certification against the fake providers: each behaviour gets its verdict, for its reason."""

from __future__ import annotations

import json

import pytest

from tests.contracts.conftest import Project, provider

# its module fixtures are made once: under xdist every test of it runs on one worker
pytestmark = pytest.mark.one_worker("certify-run")

BROKEN = {
    # behaviour: (the failing check, the failure category it must report, text in the reason)
    "hallucinated-key": ("schema", "hallucinated_key", "hallucinated key"),
    "fenced-json": ("schema", "fenced", "code fences"),
    "prose": ("schema", "prose", "prose"),
    "wrong-types": ("schema", "schema", "JSON Schema"),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    """One certify run over a chain: conformant primary and fallbacks of every kind."""
    project = Project(tmp_path_factory.mktemp("certify"))
    providers = {"primary": provider("conformant")}
    providers["conformant-anthropic"] = provider("conformant", kind="anthropic-messages")
    for behaviour in [*BROKEN, "ignores-system-prompt"]:
        for kind in ("openai-chat", "anthropic-messages"):
            providers[f"{behaviour}-{kind}"] = provider(behaviour, kind=kind)
    project.write_providers(providers)
    result = project.certify()
    return {r.provider: r for r in result.records}, result


def test_conformant_providers_of_both_wire_formats_are_eligible(run, check_of) -> None:
    records, result = run
    for pid in ("primary", "conformant-anthropic"):
        record = records[pid]
        assert record.verdict == "eligible", record.why()
        assert [c.name for c in record.checks] == ["schema", "tokenization", "round_trip"]
        assert all(c.passed and not c.evidence for c in record.checks)
        assert record.mode == "live"
        schema = check_of(record, "schema")
        assert schema.figures["samples"] == 60 and schema.figures["pass_rate"] == 1.0
    fallback = check_of(records["conformant-anthropic"], "round_trip")
    assert fallback.figures["primary"] == "primary"
    assert fallback.figures["compared_with_primary"] == 60
    assert fallback.figures["agree_with_primary"] == 60
    assert result.calls == 60 * len(records)


@pytest.mark.parametrize("kind", ["openai-chat", "anthropic-messages"])
@pytest.mark.parametrize("behaviour", sorted(BROKEN))
def test_broken_output_is_ineligible_for_its_own_reason(run, check_of, behaviour, kind) -> None:
    records, _ = run
    record = records[f"{behaviour}-{kind}"]
    check_name, failure, phrase = BROKEN[behaviour]
    assert record.verdict == "ineligible"
    check = check_of(record, check_name)
    assert not check.passed
    assert check.figures["failures"] == {failure: 60}, check.figures
    assert phrase in check.evidence[0].reason
    assert check.evidence[0].excerpt  # the redacted answer that shows it
    assert check_of(record, "tokenization").passed  # the prompt side was fine


@pytest.mark.parametrize("kind", ["openai-chat", "anthropic-messages"])
def test_ignoring_the_system_prompt_fails_the_round_trip_only(run, check_of, kind) -> None:
    records, _ = run
    record = records[f"ignores-system-prompt-{kind}"]
    assert record.verdict == "ineligible"
    assert check_of(record, "schema").passed  # well-formed, schema-valid answers…
    trip = check_of(record, "round_trip")  # …that are wrong
    assert not trip.passed and trip.figures["agree"] == 0
    reason = trip.evidence[0].reason
    assert "differs from the golden expectation" in reason
    assert "differs from the primary 'primary'" in reason
    assert "queue:" in reason


def test_temperature_above_the_contract_maximum_fails_the_schema_check(project, check_of) -> None:
    project.write_providers({"hot": provider(temperature=0.7)})
    (record,) = project.certify().records
    schema = check_of(record, "schema")
    assert record.verdict == "ineligible" and not schema.passed
    assert schema.evidence[0].reason == "temperature 0.7 exceeds the contract's max_temperature 0.3"
    assert schema.figures["pass_rate"] == 1.0  # the answers were fine; the setting is not


def test_calls_that_time_out_or_are_refused_are_evidence_not_crashes(project, check_of) -> None:
    project.write_providers({
        "primary": provider(),
        "hang": provider("hang", timeout={"connect": 1, "read": 2}),
        "limited": provider("status:429", kind="anthropic-messages"),
    })
    records = {r.provider: r for r in project.certify().records}
    hang = check_of(records["hang"], "schema")
    assert hang.figures["failures"] == {"call_failed": 60}
    assert "unknown" in hang.evidence[0].reason and "timeout" in hang.evidence[0].reason
    limited = check_of(records["limited"], "schema")
    assert "failed" in limited.evidence[0].reason and "429" in limited.evidence[0].reason
    assert records["primary"].verdict == "eligible"


def test_a_special_token_in_a_golden_input_fails_the_tokenization_check(project, check_of) -> None:
    project.add_golden(
        "en-endoftext", "Weird output", "My export ends with <|endoftext|> and then nothing.\n",
        {"category": "bug", "priority": "p3", "language": "en", "sentiment": "neutral",
         "summary": "Export output ends with a stray end-of-text marker.", "tags": ["export"],
         "confidence": 0.8, "needs_human": False},
    )
    project.write_providers({"primary": provider()})
    (record,) = project.certify().records
    tokenization = check_of(record, "tokenization")
    assert record.verdict == "ineligible" and not tokenization.passed
    (evidence,) = tokenization.evidence
    assert evidence.input_id == "en-endoftext"
    assert "special-token text '<|endoftext|>' in the rendered user prompt" in evidence.reason
    assert "<|endoftext|>" in evidence.excerpt
    assert check_of(record, "schema").passed  # the rest still ran: reported, not crashed


def test_a_prompt_that_does_not_fit_the_context_window_fails(project, check_of) -> None:
    project.write_providers({"small": provider(context_window=600, max_output_tokens=300)})
    (record,) = project.certify().records
    tokenization = check_of(record, "tokenization")
    assert not tokenization.passed
    assert "+ max_output_tokens 300 > context_window 600" in tokenization.evidence[0].reason
    assert tokenization.figures["max_prompt_tokens"] > 300


def test_only_selected_provider_is_recorded_but_primary_still_serves_as_reference(
    project, check_of
) -> None:
    project.write_providers({"primary": provider(), "second": provider(kind="anthropic-messages")})
    assert project.cli("certify", "--provider", "second", "--no-progress") == 0
    lock = project.workspace().lock
    assert set(lock.records) == {("second", "ticket_triage")}
    trip = check_of(lock.get("second", "ticket_triage"), "round_trip")
    assert trip.figures["compared_with_primary"] == 60


def test_certify_exits_1_for_an_ineligible_auto_link_and_0_for_a_manual_one(
    project, capsys
) -> None:
    providers = {"primary": provider(), "proser": provider("prose")}
    project.write_providers(providers, [("primary", "auto"), ("proser", "manual")])
    assert project.cli("certify", "--no-progress") == 0
    project.write_providers(providers, [("primary", "auto"), ("proser", "auto")])
    assert project.cli("certify", "--no-progress") == 1
    out = capsys.readouterr().out
    assert "ineligible provider 'proser' in an auto link for contract 'ticket_triage'" in out
    assert "failover-harness certify --providers" in out and "--provider proser" in out
    latest = project.root / "reports" / "latest"
    summary = (latest / "summary.md").read_text()
    assert "**proser × ticket_triage**: ineligible" in summary
    results = json.loads((latest / "results.json").read_text())
    proser = next(e for e in results["events"] if e.get("provider") == "proser")
    assert proser["type"] == "certification" and proser["verdict"] == "ineligible"
    assert proser["contract_version"] == "1.0.0" and proser["failover"] == "auto"


def test_the_round_trip_judges_what_the_failover_runner_stored(project, check_of) -> None:
    # With a schema that tolerates extra keys, the runner accepts the hallucinated answer and
    # claims it as the job's result; the business model (extra="forbid") then refuses it.
    schema_path = project.contract / "schema.json"
    text = schema_path.read_text(encoding="utf-8")
    lenient = text.replace('"additionalProperties": false', '"additionalProperties": true')
    schema_path.write_text(lenient, encoding="utf-8")
    project.write_providers({"primary": provider(), "extra": provider("hallucinated-key")})
    records = {r.provider: r for r in project.certify().records}
    assert check_of(records["primary"], "round_trip").figures["stored_by_runner"] == 60
    trip = check_of(records["extra"], "round_trip")
    assert trip.figures["stored_by_runner"] == 60  # the runner took every answer…
    assert trip.evidence[0].reason.startswith("the business code rejects the stored result")
    schema = check_of(records["extra"], "schema")  # …the schema check still names the cause
    assert schema.figures["failures"] == {"hallucinated_key": 60}


def test_an_answer_the_runner_refuses_is_not_compared(run, check_of) -> None:
    records, _ = run
    trip = check_of(records["fenced-json-openai-chat"], "round_trip")
    assert trip.figures["stored_by_runner"] == 0
    assert trip.evidence[0].reason == (
        "the failover runner stored no result (exhausted: attempt failed (invalid_json))"
    )
