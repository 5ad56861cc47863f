"""Judging answers: strict JSON, hallucinated keys, schema, business code; field comparison."""

from __future__ import annotations

import dataclasses
import json

import pytest

from harness.contracts.loader import load_contract
from harness.contracts.model import CompareRule
from harness.contracts.outputs import differences, judge, parse_strict
from tests.contracts.conftest import SHIPPED

CONTRACT = load_contract(SHIPPED)
GOOD = dict(next(g for g in CONTRACT.goldens if g.id == "en-outage").expected)


def test_the_expected_answer_passes() -> None:
    verdict = judge(CONTRACT, json.dumps(GOOD))
    assert verdict.ok and verdict.outcome["queue"] == "engineering"


@pytest.mark.parametrize(
    ("text", "failure"),
    [
        ("```json\n" + json.dumps(GOOD) + "\n```", "fenced"),
        ("Here you go: " + json.dumps(GOOD) + " Anything else?", "prose"),
        ("The ticket is a bug with priority p1.", "prose"),
        (json.dumps(GOOD)[:-10], "not_json"),
        ('{"category": "bug", "category": "billing"}', "duplicate_key"),
        ("[1, 2]", "not_object"),
        (json.dumps({**GOOD, "confidence": float("nan")}), "not_json"),
    ],
)
def test_anything_but_bare_json_fails(text: str, failure: str) -> None:
    assert judge(CONTRACT, text).failure == failure


def test_stripping_is_allowed_only_when_the_contract_says_so() -> None:
    relaxed = dataclasses.replace(CONTRACT, allow_stripping=frozenset({"fences", "prose"}))
    assert judge(relaxed, "```json\n" + json.dumps(GOOD) + "\n```").ok
    assert judge(relaxed, "Sure! " + json.dumps(GOOD)).ok
    assert parse_strict("```\n{}\n```", frozenset({"prose"}))[1] == "fenced"


def test_an_extra_key_is_hallucinated_even_when_the_schema_allows_it() -> None:
    open_schema = {**CONTRACT.schema, "additionalProperties": True}
    lenient = dataclasses.replace(CONTRACT, schema=open_schema)
    verdict = judge(lenient, json.dumps({**GOOD, "reasoning": "because"}))
    assert verdict.failure == "hallucinated_key"
    assert verdict.reason == "hallucinated key 'reasoning' (not in the contract's schema)"


def test_schema_and_business_failures_say_where() -> None:
    verdict = judge(CONTRACT, json.dumps({**GOOD, "confidence": "high"}))
    assert verdict.failure == "schema" and verdict.reason.startswith("JSON Schema: confidence:")
    rule = judge(CONTRACT, json.dumps({**GOOD, "needs_human": False}))
    assert rule.failure == "business" and "p1 goes to a human" in rule.reason
    model = judge(CONTRACT, json.dumps({**GOOD, "language": "xx"}))
    assert model.failure == "business" and "has no support team" in model.reason


def test_refusals_and_cut_off_answers_are_their_own_failures() -> None:
    assert judge(CONTRACT, "", refusal="I can't help").failure == "refused"
    assert judge(CONTRACT, json.dumps(GOOD), finish_reason="length").failure == "truncated"
    assert judge(CONTRACT, json.dumps(GOOD), finish_reason="max_tokens").failure == "truncated"


def test_comparison_rules() -> None:
    rules = {
        "score": CompareRule("numeric", 0.1),
        "tags": CompareRule("set"),
        "note": CompareRule("ignore"),
    }
    contract = dataclasses.replace(CONTRACT, compare=rules)
    base = {"score": 0.5, "tags": ["a", "b"], "note": "x", "queue": "q", "n": 1}
    close = {**base, "score": 0.59, "tags": ["b", "a"], "note": "y"}
    assert differences(contract, close, base) == []
    diffs = differences(contract, {**base, "score": 0.65, "tags": ["a"], "queue": "r"}, base)
    assert [d.split(":")[0] for d in diffs] == ["queue", "score", "tags"]
    assert differences(contract, {**base, "n": 1.0}, base) == []  # same number
    assert differences(contract, {**base, "n": True}, base)  # a bool is not the number 1
    assert differences(contract, {k: v for k, v in base.items() if k != "queue"}, base) == [
        "queue: missing from the answer"
    ]
