"""Certification through the real Portkey gateway (pinned 1.15.2, node on loopback) in front of
recording fakes: each target answers its own samples, a refused request is no verdict, an
override the contract forbids is caught on the wire and named at its config line, and a wrong
config is refused at file:line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import main
from harness.contracts.fakes import golden_answer
from harness.contracts.jsonpos import json_lines
from harness.contracts.loader import load_contracts
from harness.providers.fake_server import FakeServer
from harness.providers.recording import RecordingFake
from tests.gateways.conftest import QUIET, SHIPPED, copy_contract
from tests.gateways.portkey_gateway import PortkeyGateway

KEY = "OPENAI_API_KEY"  # Portkey forwards the client's key to a target without api_key


class Upstreams:
    def __init__(self) -> None:
        answer = golden_answer(load_contracts(SHIPPED.parent)["ticket_triage"])
        self.fakes = {name: RecordingFake("openai-chat", answer=answer,
                                          answers_from="golden ticket_triage")
                      for name in ("primary", "fallback")}
        self.servers = {name: FakeServer(fake) for name, fake in self.fakes.items()}

    def url(self, name: str) -> str:
        return f"{self.servers[name].url}/v1"

    def calls(self, name: str) -> int:
        return len(self.fakes[name].received())


@pytest.fixture(scope="module")
def upstreams() -> Iterator[Upstreams]:
    ups = Upstreams()
    for server in ups.servers.values():
        server.start()
    yield ups
    for server in ups.servers.values():
        server.stop()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, upstreams: Upstreams) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY, "sk-fake-upstream-key")
    copy_contract(tmp_path)
    (tmp_path / "failover-harness.yaml").write_text("contracts: {config: ticket_triage}\n")
    for fake in upstreams.fakes.values():
        fake.clear()
    return tmp_path


def write_config(root: Path, upstreams: Upstreams, **fallback_params: Any) -> Path:
    config = {
        "strategy": {"mode": "fallback", "on_status_codes": [500, 503]},
        "request_timeout": 30000,
        "targets": [
            {"provider": "openai", "custom_host": upstreams.url("primary"),
             "override_params": {"model": "gpt-4o-mini"}},
            {"provider": "openai", "custom_host": upstreams.url("fallback"),
             "override_params": {"model": "gpt-4.1-mini", **fallback_params}},
        ],
    }
    path = root / "config.json"
    path.write_text(json.dumps(config, indent=2) + "\n")
    return path


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_each_target_is_certified_on_its_own_upstream(
        project: Path, upstreams: Upstreams, portkey: PortkeyGateway,
        capsys: pytest.CaptureFixture[str]) -> None:
    write_config(project, upstreams)
    code = main(["certify", "--providers", "portkey:config.json", "--via", portkey.url, *QUIET])
    out = capsys.readouterr().out
    assert code == 0, out
    lock = json.loads((project / "config.lock.json").read_text())
    verdicts = {c["provider"]: c["verdict"] for c in lock["certifications"]}
    assert verdicts == {"openai-gpt-4o-mini": "eligible", "openai-gpt-4.1-mini": "eligible"}
    # 20 inputs × 2 samples each, every one answered by the upstream it was meant for
    assert upstreams.calls("primary") == upstreams.calls("fallback") == 0  # audited, then reset
    gateway = {c["provider"]: next(k for k in c["checks"] if k["name"] == "gateway")
               for c in lock["certifications"]}
    assert all(g["figures"]["observed"] == 40 for g in gateway.values()), gateway


def test_the_gateway_routing_elsewhere_is_unknown_naming_the_upstream_that_answered(
        project: Path, upstreams: Upstreams, portkey: PortkeyGateway,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The whole fallback config sent with every sample: Portkey routes by it, so the primary
    answers the fallback's samples too. The fallback is not certified on the primary's answers."""
    doc = json.loads(write_config(project, upstreams).read_text())
    for target in doc["targets"]:  # a config with several targets wants a key in each
        target["api_key"] = "sk-fake-upstream-key"
    whole = json.dumps(doc)
    code = main(["certify", "--providers", "portkey:config.json", "--via", portkey.url,
                 "--header", f"x-portkey-config: {whole}", *QUIET])
    out = capsys.readouterr().out
    assert code == 3, out
    lock = json.loads((project / "config.lock.json").read_text())
    verdicts = {c["provider"]: c["verdict"] for c in lock["certifications"]}
    assert verdicts["openai-gpt-4.1-mini"] == "undecided", out
    assert verdicts["openai-gpt-4o-mini"] == "eligible", out
    assert f"upstream meant for them ({upstreams.url('fallback')}) received none" in out
    assert upstreams.servers["primary"].url in out  # the upstream that answered, named


def test_without_the_routing_header_it_is_unreached_and_the_lock_untouched(
        project: Path, upstreams: Upstreams, portkey: PortkeyGateway,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Any gateway in providers.yaml: base_url + headers. Certified once with its header; the
    same without it is refused by Portkey (400), which is no verdict on the provider."""
    target = {"provider": "openai", "custom_host": upstreams.url("fallback"),
              "api_key": "sk-fake-upstream-key", "override_params": {"model": "gpt-4.1-mini"}}
    provider = {"kind": "openai-chat", "base_url": portkey.url, "via": portkey.url,
                "upstream": {"kind": "openai-chat", "base_url": upstreams.url("fallback"),
                             "model": "gpt-4.1-mini"},
                "model": "gpt-4.1-mini", "api_key_env": KEY, "tokenizer": "tiktoken:cl100k_base",
                "context_window": 128000, "headers": {"x-portkey-config": "${ROUTE}"}}
    doc = {"providers": {"fallback": provider},
           "chains": {"ticket_triage": [{"provider": "fallback", "failover": "auto"}]}}
    path = project / "providers.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    (project / "failover-harness.yaml").unlink()
    args = ["certify", "--providers", str(path), *QUIET]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ROUTE", json.dumps(target))
        assert main(args) == 0, capsys.readouterr().out
    lock = project / "providers.lock.json"
    before = lock.read_bytes()
    assert json.loads(before)["certifications"][0]["verdict"] == "eligible"
    capsys.readouterr()
    del provider["headers"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    code = main(args)
    out = capsys.readouterr().out
    assert code == 3, out
    assert "INELIGIBLE" not in out and "ELIGIBLE " not in out
    assert "the gateway refused the request (HTTP 400" in out
    assert "x-portkey-config" in out  # the gateway's own words: what it asked for
    assert lock.read_bytes() == before  # an unreached record never replaces the earlier one
    assert upstreams.calls("fallback") == 0


def test_a_temperature_override_above_the_contract_is_ineligible_at_its_config_line(
        project: Path, upstreams: Upstreams, portkey: PortkeyGateway,
        capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(project, upstreams, temperature=0.9)
    code = main(["certify", "--providers", "portkey:config.json", "--via", portkey.url, *QUIET])
    out = capsys.readouterr().out
    assert code == 1, out
    lock = json.loads((project / "config.lock.json").read_text())
    record = next(c for c in lock["certifications"] if c["provider"] == "openai-gpt-4.1-mini")
    assert record["verdict"] == "ineligible"
    gateway = next(k for k in record["checks"] if k["name"] == "gateway")
    reason = gateway["evidence"][0]["reason"]
    line = line_of(config, '"temperature": 0.9')
    assert f"the gateway ({portkey.url})" in reason
    assert "temperature 0.9" in reason and "at most 0.3" in reason
    assert f"config.json:{line} (targets[1].override_params.temperature)" in reason
    # the gate names the same target's line
    capsys.readouterr()
    assert main(["gate", "--providers", "portkey:config.json"]) == 1
    gate = capsys.readouterr()
    target_line = json_lines(config.read_text())[("targets", 1)]
    assert f"config.json:{target_line} (targets[1]): certified ineligible" in gate.out
    # export: the same config without the ineligible fallback
    assert main(["export", "portkey-targets", "--providers", "config.json"]) == 1
    exported = capsys.readouterr()
    kept = json.loads(exported.out)
    assert [t["custom_host"] for t in kept["targets"]] == [upstreams.url("primary")]
    assert kept["strategy"] == json.loads(config.read_text())["strategy"]
    assert f"dropped config.json:{target_line} (targets[1])" in exported.err


@pytest.mark.parametrize(("change", "message", "at"), [
    ({"strategy": {"mode": "roundrobin"}}, "strategy mode 'roundrobin' is unknown",
     ("strategy", "mode")),
    ({"targets": [{"custom_host": "http://127.0.0.1:9/v1"}]}, "a target needs `provider`",
     ("targets", 0)),
    ({"request_timeout": -5}, "`request_timeout` is a positive number", ("request_timeout",)),
])
def test_a_wrong_portkey_config_is_refused_at_file_line(
        project: Path, upstreams: Upstreams, capsys: pytest.CaptureFixture[str],
        change: dict[str, Any], message: str, at: tuple[str | int, ...]) -> None:
    config = write_config(project, upstreams)
    doc = {**json.loads(config.read_text()), **change}
    if "targets" in change:
        doc["strategy"] = {"mode": "fallback"}
    config.write_text(json.dumps(doc, indent=2) + "\n")
    assert main(["gate", "--providers", str(config)]) == 2  # detected by shape, no prefix
    err = capsys.readouterr().err
    assert message in err, err
    line = json_lines(config.read_text())[at]
    assert f"config.json:{line} ({'.'.join(map(str, at))})" in err, err
    assert "Traceback" not in err


def test_an_unknown_gateway_says_which_sources_are_known(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "kong.yaml").write_text("_format_version: '3.0'\nservices: []\n")
    assert main(["gate", "--providers", "kong.yaml"]) == 2
    err = capsys.readouterr().err
    assert "LiteLLM" in err and "Portkey" in err
    assert "base_url" in err and "headers" in err


def portkey_providers(project: Path, upstreams: Upstreams, gateway: str,
                      routes: dict[str, dict[str, Any] | None]) -> Path:
    """providers.yaml with one provider per upstream, each reached at the gateway (``base_url``,
    no ``via``: any OpenAI-compatible gateway written by hand) with its route in a
    ``headers:`` value (None: no header)."""
    providers = {}
    for name, route in routes.items():
        provider: dict[str, Any] = {
            "kind": "openai-chat", "base_url": gateway, "model": "gpt-4.1-mini",
            "api_key_env": KEY, "tokenizer": "tiktoken:cl100k_base", "context_window": 128000}
        if route is not None:
            provider["headers"] = {"x-portkey-config": json.dumps(route)}
        providers[name] = provider
    doc = {"providers": providers, "chains": {"ticket_triage": [
        {"provider": name, "failover": "auto"} for name in routes]}}
    path = project / "providers.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=1000))
    (project / "failover-harness.yaml").unlink(missing_ok=True)
    return path


def route(upstreams: Upstreams, name: str, **params: Any) -> dict[str, Any]:
    return {"provider": "openai", "custom_host": upstreams.url(name),
            "api_key": "sk-fake-upstream-key",
            "override_params": {"model": "gpt-4.1-mini", **params}}


def test_a_fallback_without_its_routing_header_is_undecided_quoting_the_gateway(
        project: Path, upstreams: Upstreams, portkey: PortkeyGateway,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The fallback's x-portkey-config header missing, no `via:`: Portkey refuses every call
    (400). No call reached a provider: undecided, the refusal quoted, the lock unchanged."""
    routes: dict[str, dict[str, Any] | None] = {
        "primary": route(upstreams, "primary"), "fallback": route(upstreams, "fallback")}
    path = portkey_providers(project, upstreams, portkey.url, routes)
    args = ["certify", "--providers", str(path), *QUIET]
    assert main(args) == 0, capsys.readouterr().out
    lock = project / "providers.lock.json"
    before = lock.read_bytes()
    fallback_before = next(c for c in json.loads(before)["certifications"]
                           if c["provider"] == "fallback")
    assert fallback_before["verdict"] == "eligible"
    capsys.readouterr()
    routes["fallback"] = None
    portkey_providers(project, upstreams, portkey.url, routes)
    upstreams.fakes["fallback"].clear()
    for only in ([], ["--provider", "fallback"]):
        code = main([*args, *only])
        out = capsys.readouterr().out
        assert code == 3, out
        assert "INELIGIBLE" not in out, out
        assert "HTTP 400" in out and (
            "Either x-portkey-config or x-portkey-provider header is required" in out), out
        after = json.loads(lock.read_bytes())
        assert next(c for c in after["certifications"]
                    if c["provider"] == "fallback") == fallback_before
    assert lock.read_bytes() != before  # the whole run re-certified the primary …
    before = lock.read_bytes()
    assert main([*args, "--provider", "fallback"]) == 3
    assert lock.read_bytes() == before  # … the fallback alone leaves it byte for byte
    assert upstreams.calls("fallback") == 0
    out = capsys.readouterr().out
    assert "input removed" not in out  # no call judged: no drift to report
    assert "headers" in out.split("fix:")[1]  # the fix names what the gateway asked for


def test_a_temperature_override_in_a_header_config_is_ineligible_naming_gateway_and_config(
        project: Path, upstreams: Upstreams, portkey: PortkeyGateway,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The Portkey config in a providers.yaml `headers:` value, read as the `portkey:` source
    reads a config file: its override_params.temperature 0.9 (the contract allows 0.3) reaches
    the model whatever the client sends."""
    routes: dict[str, dict[str, Any] | None] = {
        "primary": route(upstreams, "primary"),
        "fallback": route(upstreams, "fallback", temperature=0.9)}
    path = portkey_providers(project, upstreams, portkey.url, routes)
    code = main(["certify", "--providers", path.name, *QUIET])  # cwd: the project
    out = capsys.readouterr().out
    assert code == 1, out
    header_line = [n for n, line in enumerate(path.read_text().splitlines(), 1)
                   if "x-portkey-config" in line][1]  # the fallback's, the second provider
    lock = json.loads((project / "providers.lock.json").read_text())
    verdicts = {c["provider"]: c["verdict"] for c in lock["certifications"]}
    assert verdicts == {"primary": "eligible", "fallback": "ineligible"}, out
    said = next(line for line in out.splitlines() if "ineligible provider 'fallback'" in line)
    assert "temperature 0.9" in said and f"the Portkey gateway ({portkey.url})" in said, said
    record = next(c for c in lock["certifications"] if c["provider"] == "fallback")
    reason = next(k for k in record["checks"] if k["name"] == "gateway_config")["evidence"][0][
        "reason"]
    assert "temperature 0.9" in reason and "at most 0.3" in reason, reason
    assert f"the Portkey gateway ({portkey.url})" in reason, reason
    assert (f"override_params.temperature in the header's config at "
            f"providers.yaml:{header_line} (providers.fallback.headers.x-portkey-config)") in reason
    assert upstreams.calls("fallback") > 0  # the gateway sent it on: the override is real
    assert {r.body["temperature"] for r in upstreams.fakes["fallback"].received()} == {0.9}
    # check certifies the same way (and gates on it)
    (project / "providers.lock.json").unlink()
    assert main(["check", "--providers", path.name]) == 1
    out = capsys.readouterr().out
    assert "temperature 0.9" in out and f"the Portkey gateway ({portkey.url})" in out, out


def test_a_header_config_that_is_not_json_is_refused_at_its_line_before_any_call(
        project: Path, upstreams: Upstreams, capsys: pytest.CaptureFixture[str]) -> None:
    path = portkey_providers(project, upstreams, "http://127.0.0.1:9/v1", {
        "primary": route(upstreams, "primary"), "fallback": route(upstreams, "fallback")})
    text = path.read_text()
    cut = text.rindex("x-portkey-config: '") + len("x-portkey-config: '")
    path.write_text(text[:cut] + '{"provider": "openai",' + text[text.index("'", cut):])
    assert main(["certify", "--providers", path.name, *QUIET]) == 2
    err = capsys.readouterr().err
    line = [n for n, text in enumerate(path.read_text().splitlines(), 1)
            if "x-portkey-config" in text][1]
    assert f"providers.yaml:{line} (providers.fallback.headers.x-portkey-config)" in err, err
    assert "not a Portkey config (" in err and "not valid JSON" in err, err
    assert upstreams.calls("primary") == 0


@pytest.mark.parametrize(("config", "where"), [
    ({"virtual_key": "vk-fallback", "override_params": {"temperature": 0.9}},
     "override_params.temperature"),
    ({"strategy": {"mode": "conditional", "conditions": []}, "override_params":
      {"temperature": 0.9}, "targets": [{"virtual_key": "a"}, {"virtual_key": "b"}]},
     "targets[0].override_params.temperature"),
])
def test_a_hosted_portkey_config_in_a_header_still_has_its_overrides_read(
        project: Path, upstreams: Upstreams, capsys: pytest.CaptureFixture[str],
        config: dict[str, Any], where: str) -> None:
    """Virtual keys and conditional routing (Portkey's hosted service): the `portkey:` source
    cannot address them, yet the overrides reach the model all the same. A saved config's id
    holds nothing to read."""
    path = portkey_providers(project, upstreams, "fake://conformant",
                             {"primary": None, "fallback": config})
    assert main(["certify", "--providers", path.name, *QUIET]) == 1
    out = capsys.readouterr().out
    assert "sets temperature 0.9" in out and where in out, out
    doc = yaml.safe_load(path.read_text())
    doc["providers"]["fallback"]["headers"]["x-portkey-config"] = "pc-saved-config-1234"
    path.write_text(yaml.safe_dump(doc))
    assert main(["certify", "--providers", path.name, *QUIET]) == 0
