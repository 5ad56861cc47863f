"""Body templates and owners in a target profile: what the loader refuses (at file:line, with the
fix), and what a template renders."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from harness.domain.clock import ManualClock
from harness.domain.errors import ConfigError
from harness.scenarios import load_scenario
from harness.scenarios.model import Create
from harness.scenarios.targets.bodies import probe_intents
from harness.scenarios.targets.service import ProfileTarget
from harness.target.bodies import body_text, check_template, intent_view, render, respelled
from harness.target.model import load_profile
from harness.target.owners import Owners, present

HEAD = """\
name: p
operations:
  get_job: {method: GET, path: "/jobs/{job_id}"}
  create_job:
    method: POST
    path: /jobs
    key_header: Idempotency-Key
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("body", "said", "fixed"), [
    ('{text: "{intent.input.ticket}"}', "differ only in contract", "{prompt}"),
    ('{text: "{txt}"}', "{txt} is not a placeholder", "{intent_json}"),
    ('{text: "{intent.input.nope}"}', "names intent.input.nope", "{intent.<field>}"),
    ('{model: m, contract: "{intent.contract}"}', "differ only in input.ticket", "{prompt}"),
])
def test_a_template_that_cannot_tell_intents_apart_is_refused_at_its_line(
        tmp_path: Path, body: str, said: str, fixed: str) -> None:
    path = write(tmp_path, HEAD + f"    body: {body}\n")
    with pytest.raises(ConfigError) as caught:
        load_profile(path)
    error = caught.value
    assert error.line == 8 and said in error.message, error
    assert fixed in (error.fix or "")


@pytest.mark.parametrize("body", ['{text: "{prompt}"}', '{input: {text: "{intent_json}"}}',
                                  '{model: m, messages: [{role: user, content: "Do: {prompt}"}]}',
                                  '{contract: "{intent.contract}", input: "{intent.input}", '
                                  'params: "{intent.params}", policy: "{intent.policy}"}'])
def test_a_template_carrying_the_whole_intent_loads(tmp_path: Path, body: str) -> None:
    profile = load_profile(write(tmp_path, HEAD + f"    body: {body}\n"))
    assert profile.operations["create_job"].body is not None


def test_two_intents_two_bodies_one_intent_one_body() -> None:
    template = {"text": "{prompt}", "n": "{intent.input.priority}"}
    a = {"contract": "c", "input": {"ticket": "x", "priority": 1}}
    spelt = '{"input": {"priority": 1.0, "ticket": "x"}, "contract": "c", "policy": {}}'
    b = {"contract": "c", "input": {"ticket": "x", "priority": 2}}
    assert render(template, intent_view(a)) == render(template, intent_view(json.loads(spelt)))
    assert render(template, intent_view(a)) != render(template, intent_view(b))
    assert render(template, intent_view(a))["n"] == 1  # a whole-value placeholder keeps its type
    assert check_template(template) is None


def test_a_respelt_intent_reorders_the_services_body() -> None:
    body = {"model": "m", "text": "t"}
    assert not respelled('{"contract":"c","input":{}}')
    assert respelled('{"input":{},"contract":"c"}') and respelled('{"contract": "c"}')
    assert body_text(body, respelling=True) == '{"text":"t","model":"m"}'
    assert body_text(body, respelling=False) == '{"model":"m","text":"t"}'


@pytest.mark.parametrize(("extra", "said"), [
    ('auth: {header: X-Api-Key, value: "{token}"}\nowners: {header: X-Owner, value: "{owner}"}\n',
     "auth: and owners: both"),
    ('owners: {header: X-Owner, value: "static"}\n', "exactly one of {owner}"),
    ('owners: {header: X-Owner, cookie: c, value: "{owner}"}\n', "more than one place"),
    ('owners: {header: X-Tenant}\n', "has no value: say what goes in the header X-Tenant"),
])
def test_owners_mistakes_are_refused(tmp_path: Path, extra: str, said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_profile(write(tmp_path, HEAD + extra))
    assert said in str(caught.value)


def test_owners_forms_present_the_owner() -> None:
    named = Owners(header="X-Owner", value="{owner}")
    assert present(named, "alice", None).headers == {"X-Owner": "alice"}
    assert not named.needs_tokens
    cookie = Owners(cookie="session", value="{owner}")
    assert present(cookie, "bob", None).headers == {"Cookie": "session=bob"}
    query = Owners(query="owner", value="{owner}")
    assert present(query, "bob", None).params == {"owner": "bob"}
    bearer = Owners()
    assert bearer.needs_tokens and bearer.header == "Authorization"
    assert present(bearer, "alice", "s3cret").headers == {"Authorization": "Bearer s3cret"}
    assert present(bearer, "alice", None).headers == {}


def test_auth_is_the_older_spelling_of_owners(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, HEAD + 'auth: {header: X-Api-Key, value: "{token}"}\n'))
    assert profile.owner_form == Owners(header="X-Api-Key", value="{token}")
    assert load_profile(write(tmp_path, HEAD)).owner_form == Owners()


@pytest.mark.parametrize(("owners", "where"), [
    ('{cookie: tenant, value: "{owner}"}', ("cookie", "tenant=bob")),
    ('{query: owner, value: "{owner}"}', ("query", "owner=bob")),
    ('{header: X-Owner, value: "user:{owner}"}', ("x-owner", "user:bob")),
])
def test_every_request_presents_its_owner(tmp_path: Path, owners: str,
                                          where: tuple[str, str]) -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(404, json={"error": "not_found"})

    path = write(tmp_path, HEAD + f"owners: {owners}\n")
    target = ProfileTarget("http://service.test", path, env={},
                           transport=httpx.MockTransport(answer))
    with target.session(ManualClock(), "r", 1) as session:
        session.get_job("bob", "job-1")
    name, value = where
    request = seen[-1]
    shown = request.url.query.decode() if name == "query" else request.headers.get(name)
    assert shown == value
    assert "authorization" not in request.headers  # no token is sent, and none was needed


def test_a_reorderable_body_is_respelt_for_the_other_spellings(tmp_path: Path) -> None:
    scenario = load_scenario(Path(__file__).resolve().parents[2] / "scenarios" /
                             "reordered_json_same_intent.yaml")
    path = write(tmp_path, HEAD + '    body: {model: m, text: "{prompt}"}\n')
    target = ProfileTarget("http://service.test", path, env={})
    assert target.not_applicable(scenario) is None
    sent = [target.as_sent(step.action.intent) for step in scenario.steps
            if isinstance(step.action, Create)]
    assert [list(s.body) for s in sent] == [["model", "text"]] * 3
    assert sent[0].text.startswith('{"model"') and sent[1].text.startswith('{"text"')
    assert [json.loads(s.text) for s in sent] == [sent[0].body] * 3  # one body, spelt two ways
    assert len({s.fingerprint for s in sent}) == 1


def test_the_preflight_renders_every_template_that_loaded(tmp_path: Path) -> None:
    body = '{text: "{prompt}", n: "{intent.input.priority}", t: "{intent.params.temperature}"}'
    path = write(tmp_path, HEAD + f"    body: {body}\n")
    target = ProfileTarget("http://service.test", path, env={})
    sent = [target.as_sent(i) for i in probe_intents()]
    assert sent[0].body["n"] == 1 and sent[0].text != sent[1].text
