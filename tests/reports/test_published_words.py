"""One vocabulary (issue 32 item 3): events speak the engines' four vocabularies; results@2 keeps
its published words, made in one place when a document is written and read back from it."""

from __future__ import annotations

import dataclasses
import json
import typing
from typing import Any

import jsonschema
import pytest

from harness.domain.published import engine_words, published, published_fields, word
from harness.domain.verdicts import (
    CHECK_WORD,
    DECISION_WORD,
    FINDING_WORD,
    JUDGED_WORD,
    SCENARIO_WORD,
    Eligibility,
    Outcome,
    Promise,
    Verdict,
)
from harness.drill.events import DrilledIntent, DrillFinding, DrillRun
from harness.drill.summary import IntentRecord
from harness.reports.model import Results
from harness.reports.schema import results_json_schema, validate_results
from tests.reports.sample import sample_results

ENGINE = (Promise, Verdict, Outcome, Eligibility)
#: every word a verdict is said in, by an engine or by a document
VERDICT_WORDS = {w for t in (SCENARIO_WORD, CHECK_WORD, JUDGED_WORD, FINDING_WORD, DECISION_WORD)
                 for pair in t.items() for w in pair}


def drill_run() -> DrillRun:
    finding = DrillFinding("one_job_per_intent", "broken", "two jobs for one click")
    intent = DrilledIntent("drill-1", 1, "fail", (finding,))
    return DrillRun("double-click", "http://svc", "fail", "fail", intents=(intent,))


def results() -> Results:
    whole = sample_results()
    return dataclasses.replace(whole, events=(*whole.events, drill_run()))


def test_a_document_says_the_published_words_and_reads_back_in_the_engines() -> None:
    data = json.loads(json.dumps(results().to_json()))
    validate_results(data)
    events = data["events"]
    assert [e["verdict"] for e in events if e["type"] == "scenario_run"] == [
        "passed", "failed", "unknown", "not_applicable"]
    assert [c["verdict"] for c in events[1]["checks"]] == ["invalid"]
    explore = next(e for e in events if e["type"] == "explore_result")
    assert explore["verdict"] == "failed" and explore["checks"][0]["verdict"] == "invalid"
    matrix = next(e for e in events if e["type"] == "detection_matrix")
    assert {c["verdict"] for c in matrix["cells"]} == {"passed", "failed"}
    certs = [e for e in events if e["type"] == "certification"]
    assert [c["verdict"] for c in certs[1]["checks"]] == ["fail", "pass", "skipped"]
    assert certs[0]["checks"][0]["statistics"][0]["decision"] == "pass"
    drill = events[-1]
    assert (drill["verdict"], drill["intents"][0]["verdict"]) == ("failed", "failed")
    assert drill["intents"][0]["findings"][0]["verdict"] == "broken"
    back = Results.from_json(data)
    assert back == results()  # held, broken, pass, fail again: nothing lost either way
    assert back.events[1].verdict == "broken" and back.events[1].checks[0].verdict == "broken"


def test_a_renderer_says_an_events_word_as_the_document_does() -> None:
    run, _, unknown, na = sample_results().events[:4]
    assert [word(e) for e in (run, unknown, na)] == ["passed", "unknown", "not_applicable"]
    assert word(drill_run()) == "failed" and word(drill_run().intents[0].findings[0]) == "broken"


def test_an_engines_word_in_a_document_is_refused() -> None:
    data = json.loads(json.dumps(results().to_json()))
    data["events"][0]["verdict"] = "held"  # an engine's word is not the document's
    back = engine_words(type(results().events[0]), data["events"][0])
    assert back["verdict"] == "held"  # no table publishes it: left for the validator
    with pytest.raises(jsonschema.ValidationError):
        validate_results(data)
    data["events"][0]["verdict"] = "passed"
    validate_results(data)


def test_a_drill_shards_records_are_kept_in_the_published_words() -> None:
    record = IntentRecord(3, "fail", (("one_job_per_intent", "broken", "two jobs", ""),),
                          drill_run().intents[0])
    data = json.loads(json.dumps(published(record)))
    assert data["verdict"] == "failed" and data["shown"]["verdict"] == "failed"
    assert engine_words(IntentRecord, data)["verdict"] == "fail"


def test_each_published_field_lists_its_words_in_the_schema_and_covers_its_vocabulary() -> None:
    defs = results_json_schema()["$defs"]
    fields = list(published_fields(Results))
    assert {(cls.__name__, name) for cls, name, _ in fields} == {
        ("Check", "verdict"), ("ScenarioRun", "verdict"), ("TrialSeries", "verdict"),
        ("MatrixCell", "verdict"), ("ExploreResult", "verdict"), ("DrillRun", "verdict"),
        ("DrilledIntent", "verdict"), ("DrillFinding", "verdict"), ("CertCheck", "verdict"),
        ("Statistic", "decision")}
    for cls, name, words in fields:
        hint = typing.get_type_hints(cls)[name]
        if hint is str:  # a statistic's decision: a string, "" when it decides nothing
            continue
        assert hint in (Promise, Verdict), (cls, name)
        table = cls.PUBLISHED[name]  # type: ignore[attr-defined]
        assert set(table) == set(typing.get_args(hint)), (cls, name)
        assert defs[cls.__name__]["properties"][name]["enum"] == words


def _literals(hint: Any) -> list[Any]:
    if typing.get_origin(hint) is typing.Literal:
        return [hint]
    return [lit for arg in typing.get_args(hint) for lit in _literals(arg)]


def test_events_speak_only_the_four_engine_vocabularies() -> None:
    seen: set[type[Any]] = set()
    todo: list[Any] = [Results]
    while todo:
        kind = todo.pop()
        for arm in (typing.get_args(kind) or (kind,)):
            if not isinstance(arm, type) or not hasattr(arm, "__dataclass_fields__"):
                todo.extend(a for a in typing.get_args(arm) if a is not Ellipsis)
                continue
            if arm in seen:
                continue
            seen.add(arm)
            for name, hint in typing.get_type_hints(arm).items():
                for literal in _literals(hint):
                    if VERDICT_WORDS & set(typing.get_args(literal)):
                        assert literal in ENGINE, (arm.__name__, name, literal)
                todo.append(hint)
    assert len(seen) > 30  # every event and every piece of one
