"""Real gateways through the same drill engine (`failover-harness drill --target … --target-profile
…`, a chat profile): a LiteLLM proxy (litellm[proxy], offline) and the Portkey gateway
(@portkey-ai/gateway 1.15.2 on node, its routing in the ``x-portkey-config`` header), each
failing over from a primary to a fallback that the drill serves on free loopback ports.

What each gateway does is checked against what it was measured to do (the counts at the fakes,
written beside each expectation), so a drill that cannot reach the providers, or judges a
gateway's behaviour wrongly, fails here."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import _cli
from tests.drill.conftest import ROOT
from tests.gateways.conftest import Gateway
from tests.gateways.litellm_proxy import MASTER_KEY, LiteLLMProxy, free_port
from tests.gateways.portkey_gateway import PortkeyGateway

pytestmark = pytest.mark.slow  # a gateway starts in seconds (LiteLLM: 5-30 s on a loaded box)

TRIALS = 3
DRILLS = "control,hang,late,5xx,overload-429,reset,stream-cut"
PROVIDER_TIMEOUT_S = 1  # the gateway's timeout for one provider call
CHAT_PROFILE: dict[str, Any] = {
    "drill": {
        "submit": {"kind": "chat", "path": "/v1/chat/completions", "headers": {},
                   "body": {"model": "drill", "max_tokens": 16, "messages": [
                       {"role": "user", "content": "Summarise ticket {tag} in one line."}]}},
        "providers": [
            {"name": "primary", "wire": "openai", "role": "primary", "port": "${PRIMARY_PORT}"},
            {"name": "fallback", "wire": "openai", "role": "fallback",
             "port": "${FALLBACK_PORT}"}],
        # job_s: LiteLLM's three timed-out calls, its backoff between them and the fallback
        # took 16 s of one intent on a loaded box (the client gave up: `completed` broken);
        # a gateway that answers is not waited for longer, a hung call ends when it gives up
        "timeouts": {"provider_s": PROVIDER_TIMEOUT_S, "job_s": 30},
        "policy": {"max_billed_calls": 2},
    },
}


class Ports:
    def __init__(self, primary: int | None = None, fallback: int | None = None) -> None:
        self.primary, self.fallback = primary or free_port(), fallback or free_port()


def drill_gateway(tmp_path: Path, url: str, ports: Ports, name: str, headers: dict[str, str],
                  env: dict[str, str], *, drills: str = DRILLS, stream: bool = False,
                  extra: list[str] | None = None, hedge: bool = False,
                  model: str = "drill") -> tuple[int, dict[str, dict[str, Any]], str]:
    """Write the chat profile, drill the gateway (CLI subprocess), return (exit code, the
    drill_run events by drill, output). ``hedge``: the profile declares the gateway's fallback
    after its timeout as the one hedge (``policy.hedge``, ``after_s`` the timeout); ``model``:
    the one the request names (a LiteLLM model group)."""
    profile = json.loads(json.dumps(CHAT_PROFILE))
    profile["name"] = name
    profile["drill"]["submit"]["body"]["model"] = model
    profile["drill"]["submit"]["headers"] = headers
    if stream:
        profile["drill"]["submit"]["stream"] = True
    if hedge:
        profile["drill"]["policy"]["hedge"] = {"allowed": True, "after_s": PROVIDER_TIMEOUT_S}
    path = tmp_path / f"{name}.profile.yaml"
    path.write_text(yaml.safe_dump(profile, sort_keys=False), encoding="utf-8")
    report = tmp_path / f"report-{name}"
    done = _cli.run(
        ["drill", "--target", url, "--target-profile",
         str(path), "--drills", drills, "--trials", str(TRIALS), "--report-dir", str(report),
         *(extra or [])],
        env={**os.environ, **env, "PRIMARY_PORT": str(ports.primary),
             "FALLBACK_PORT": str(ports.fallback), "PYTHONPATH": str(ROOT)},
        timeout=600, cwd=ROOT)
    events = json.loads((report / "latest" / "results.json").read_text("utf-8"))["events"]
    return (done.returncode, {e["drill"]: e for e in events if e["type"] == "drill_run"},
            done.stdout + done.stderr)


def rates(event: dict[str, Any]) -> dict[str, tuple[int, int, int]]:
    """promise -> (held, broken, unknown)."""
    return {p["promise"]: (p["held"], p["broken"], p["unknown"]) for p in event["promises"]}


# -- LiteLLM -----------------------------------------------------------------------------------
@pytest.fixture
def litellm(gateway: Gateway) -> tuple[LiteLLMProxy, Ports]:
    """The session's LiteLLM proxy (tests/gateways/servers.py: one start per run, 5-6 s of CPU):
    its group ``drill-primary`` (timeout 1 s, LiteLLM's default retries) falls back to
    ``drill-fallback``, both at the ports the session reserved for the drill's fakes."""
    ports = gateway.drill_ports
    return gateway.proxy, Ports(ports["drill-primary"], ports["drill-fallback"])


#: the tests on the session's LiteLLM proxy run on its xdist worker (tests/conftest.py), also
#: those that ask for the fixture by name
ON_THIS_LITELLM = pytest.mark.one_worker("litellm")
LITELLM_MODEL = "drill-primary"


@ON_THIS_LITELLM
def test_litellm_proxy_through_the_drill_engine(litellm: tuple[LiteLLMProxy, Ports],
                                                tmp_path: Path) -> None:
    """LiteLLM's router retries the primary (num_retries) before its fallback: a timed-out,
    late or reset primary is called up to 3 times, each call that reaches it billed, then the
    fallback once: 4 billed calls for one request (the old gateway drill saw the same), and the
    retries of a timed-out call are new attempts while its outcome is unknown; refusals are
    retried too but not billed. Measured unloaded: 12 calls for 3 intents in every failing drill.
    On a starved machine an attempt can fail inside the proxy before it reaches the primary
    (stop 49's CI: two intents showed one primary call; a later run: all three intents of the hang
    drill two, and one each of late and reset, which times nothing out): each intent is judged by
    the calls that reached the fakes (drill.json: every intent, passed or not), and at least one
    of the three drills' nine intents shows all three."""
    proxy, ports = litellm
    code, runs, out = drill_gateway(tmp_path, proxy.url, ports, "litellm",
                                    {"Authorization": "Bearer ${LITELLM_MASTER_KEY}"},
                                    {"LITELLM_MASTER_KEY": MASTER_KEY}, model=LITELLM_MODEL)
    assert code == 1 and MASTER_KEY not in out, out
    reached(runs, out)
    primary_calls = []
    for name in ("hang", "late", "reset"):
        assert runs[name]["verdict"] == "failed", detail(runs[name])
        found = only_broken(runs[name])
        # a timed-out call LiteLLM gave up on stays unresolved: its retry is a new attempt
        # while the outcome is unknown (no hedge declared); a reset is resolved
        expected = {"billed_within_bound"} | ({"within_hedge"} if name != "reset" else set())
        assert set(found) == expected, detail(runs[name])
        primary_calls += litellm_attempts_judged_by_their_calls(tmp_path, "litellm", name,
                                                                runs[name])
        assert runs[name]["billed_calls"] > 2 * TRIALS, (name, out)  # [4 per intent]
    assert 3 in primary_calls, primary_calls  # LiteLLM's num_retries (2), seen whole
    for name in ("5xx", "overload-429"):  # refused (retried), then the fallback: 1 billed
        assert runs[name]["verdict"] == "passed", (name, out)
        assert runs[name]["billed_calls"] == TRIALS, (name, out)
        assert runs[name]["provider_calls"] >= 2 * TRIALS, (name, out)  # [4 per intent]
    # a stream cut after its first bytes: LiteLLM has sent its headers, cannot retry nor fall
    # back, and the client gets the broken stream (the old gateway drill saw the same)
    assert only_broken(runs["stream-cut"]) == {"completed": TRIALS}, detail(runs["stream-cut"])
    assert runs["stream-cut"]["billed_calls"] == TRIALS, detail(runs["stream-cut"])


# -- Portkey -----------------------------------------------------------------------------------
def portkey_config(ports: Ports) -> str:
    """Portkey's fallback strategy over two OpenAI-wire targets, a 1 s request timeout."""
    def target(port: int) -> dict[str, Any]:
        return {"provider": "openai", "api_key": "sk-drill-test-not-a-secret",
                "custom_host": f"http://127.0.0.1:{port}/v1"}
    return json.dumps({"strategy": {"mode": "fallback"},
                       "request_timeout": PROVIDER_TIMEOUT_S * 1000,
                       "targets": [target(ports.primary), target(ports.fallback)]})


def test_portkey_gateway_through_the_drill_engine(portkey: PortkeyGateway,
                                                  tmp_path: Path) -> None:
    """Portkey's fallback strategy calls the primary once: a timed-out, late or reset primary
    (billed) and the fallback make 2 billed calls, a refusal 1: within the bound. A timed-out
    or late primary is abandoned at Portkey's request_timeout, so it stays unresolved (its
    outcome unknown: docs/drill.md) and the fallback it starts is a new attempt beyond the hedge
    (the profile declares none): within_hedge breaks in every intent (measured: "primary#2
    (primary, scripted hang) started at 0.015 s, abandoned at 1.011 s", "fallback#10 ... started
    at 1.014 s"); a reset is resolved, so its fallback is not. A primary whose answer breaks off
    mid-body is not failed over: the client gets no whole answer."""
    ports = Ports()
    code, runs, out = drill_gateway(
        tmp_path, portkey.url.removesuffix("/v1"), ports, "portkey",
        {"x-portkey-config": "${PORTKEY_CONFIG}"}, {"PORTKEY_CONFIG": portkey_config(ports)})
    assert code == 1, out
    reached(runs, out)
    for name in ("hang", "late"):  # the abandoned primary is unresolved when the fallback starts
        assert runs[name]["verdict"] == "failed", detail(runs[name])
        assert only_broken(runs[name]) == {"within_hedge": TRIALS}, detail(runs[name])
    for name in ("5xx", "overload-429", "reset"):
        assert runs[name]["verdict"] == "passed", detail(runs[name])
    for name in ("hang", "late", "5xx", "overload-429", "reset"):
        assert runs[name]["provider_calls"] == 2 * TRIALS, (name, out)
    for name in ("hang", "late", "reset"):
        assert runs[name]["billed_calls"] == 2 * TRIALS, (name, out)
    for name in ("5xx", "overload-429"):
        assert runs[name]["billed_calls"] == TRIALS, (name, out)
    cut = runs["stream-cut"]
    assert only_broken(cut) == {"completed": TRIALS}, out
    assert cut["provider_calls"] == TRIALS, out  # the fallback was never tried


def test_portkey_fallback_after_its_timeout_is_the_hedge_a_profile_declares(
        portkey: PortkeyGateway, tmp_path: Path) -> None:
    """A gateway's fallback after the primary's timeout is a second attempt while the first is
    unresolved: a true finding unless the profile declares it. Declared (``policy.hedge``:
    allowed, ``after_s`` Portkey's request_timeout; two billed calls), Portkey's one fallback is
    that hedge: the hung and late primaries hold every promise; undeclared, the same calls break
    within_hedge (the test above)."""
    ports = Ports()
    code, runs, out = drill_gateway(
        tmp_path, portkey.url.removesuffix("/v1"), ports, "portkey-hedged",
        {"x-portkey-config": "${PORTKEY_CONFIG}"}, {"PORTKEY_CONFIG": portkey_config(ports)},
        drills="control,hang,late", hedge=True)
    assert code == 0, out
    for name in ("hang", "late"):
        assert runs[name]["verdict"] == "passed", detail(runs[name])
        assert rates(runs[name])["within_hedge"] == (TRIALS, 0, 0), detail(runs[name])
        assert runs[name]["provider_calls"] == 2 * TRIALS, detail(runs[name])


@ON_THIS_LITELLM
def test_litellm_retries_go_beyond_a_declared_hedge(litellm: tuple[LiteLLMProxy, Ports],
                                                     tmp_path: Path) -> None:
    """Declaring the fallback as the hedge does not excuse LiteLLM's retries of the timed-out
    primary (num_retries): each starts while the abandoned call is unresolved, a second new
    attempt beyond the one hedge; within_hedge breaks in every intent whose fakes saw it, named
    so. [3 of 3 unloaded; an intent whose first attempts timed out inside a starved proxy, before
    reaching the primary, shows one primary call and the fallback: the one hedge, held.]"""
    proxy, ports = litellm
    code, runs, out = drill_gateway(tmp_path, proxy.url, ports, "litellm-hedged",
                                    {"Authorization": "Bearer ${LITELLM_MASTER_KEY}"},
                                    {"LITELLM_MASTER_KEY": MASTER_KEY}, drills="control,hang",
                                    hedge=True, model=LITELLM_MODEL)
    assert code == 1, out
    # every primary call of a hang drill is left unresolved: past the first call and one hedge
    intents = judged_per_intent(tmp_path, "litellm-hedged", "hang", runs["hang"], "within_hedge",
                                lambda calls: calls["primary"] + calls["fallback"] > 2)
    assert any(i["calls"]["primary"] + i["calls"]["fallback"] > 2 for i in intents), \
        detail(runs["hang"])
    assert "a second new attempt after the hedge" in out, out


def reached(runs: dict[str, dict[str, Any]], out: str) -> None:
    """The engine reached the gateway and, through it, the providers, in every drill; the
    control passes with one call per intent."""
    assert set(runs) == set(DRILLS.split(",")), out
    for name, run in runs.items():
        assert run["provider_calls"] >= TRIALS, (name, out)
        assert not any(p[2] for p in rates(run).values()), (name, out)  # nothing unknown
    assert runs["control"]["verdict"] == "passed", out
    assert runs["control"]["provider_calls"] == runs["control"]["billed_calls"] == TRIALS


def detail(run: dict[str, Any]) -> str:
    """A drill's rates and its failing intents' calls, for an assertion message."""
    return json.dumps({"drill": run["drill"], "promises": rates(run),
                       "intents": [(i["verdict"], i["calls"], i.get("note"))
                                   for i in run["intents"]]})


def judged_per_intent(tmp_path: Path, report: str, name: str, run: dict[str, Any],
                      promise: str, over: Callable[[dict[str, int]], bool]
                      ) -> list[dict[str, Any]]:
    """Every intent of drill ``name`` (drill.json): LiteLLM's attempts that reached the primary,
    1 to 3 (num_retries 2), then the fallback once; ``promise`` broken exactly when ``over`` its
    calls by provider, the drill's rate the sum. Returns the intents (drill.json has every intent,
    passed or not; results.json a drill's failing intents only, at most five)."""
    path = tmp_path / f"report-{report}" / "latest" / "drill.json"
    intents: list[dict[str, Any]] = json.loads(path.read_text("utf-8"))["drills"][name]
    assert len(intents) == TRIALS, detail(run)
    broken = 0
    for intent in intents:
        calls = intent["calls"]
        assert 1 <= calls.get("primary", 0) <= 3 and calls.get("fallback") == 1, (name, intent)
        verdict = intent["findings"][promise]["verdict"]
        assert verdict == ("broken" if over(calls) else "held"), (name, intent)
        broken += over(calls)
    assert rates(run)[promise] == (TRIALS - broken, broken, 0), detail(run)
    return intents


def litellm_attempts_judged_by_their_calls(tmp_path: Path, report: str, name: str,
                                           run: dict[str, Any]) -> list[int]:
    """``judged_per_intent`` for ``billed_within_bound``: each call billed, the bound broken
    exactly when more than ``policy.max_billed_calls`` (2) were billed. Returns each intent's
    primary calls."""
    bound = CHAT_PROFILE["drill"]["policy"]["max_billed_calls"]
    intents = judged_per_intent(tmp_path, report, name, run, "billed_within_bound",
                                lambda calls: calls["primary"] + calls["fallback"] > bound)
    for intent in intents:
        assert intent["billed_completions"] == intent["calls"]["primary"] + 1, (name, intent)
    return [intent["calls"]["primary"] for intent in intents]


def only_broken(run: dict[str, Any]) -> dict[str, int]:
    return {promise: r[1] for promise, r in rates(run).items() if r[1]}


@pytest.mark.parametrize("name", [  # the fixture is asked for by name: its group is said here
    pytest.param("litellm", marks=ON_THIS_LITELLM),
    pytest.param("portkey", marks=pytest.mark.one_worker("portkey"))])
def test_streaming_through_a_gateway(name: str, request: pytest.FixtureRequest,
                                     tmp_path: Path) -> None:
    """``submit.stream: true``: the control passes; a cut stream never reaches the client as
    a success (LiteLLM retries, then streams the fallback's answer; Portkey answers HTTP 500)."""
    model = "drill"
    if name == "litellm":
        proxy, ports = request.getfixturevalue("litellm")
        url, headers = proxy.url, {"Authorization": "Bearer ${LITELLM_MASTER_KEY}"}
        env, model = {"LITELLM_MASTER_KEY": MASTER_KEY}, LITELLM_MODEL
    else:
        ports = Ports()
        url = request.getfixturevalue("portkey").url.removesuffix("/v1")
        headers, env = {"x-portkey-config": "${PORTKEY_CONFIG}"}, {
            "PORTKEY_CONFIG": portkey_config(ports)}
    _, runs, out = drill_gateway(tmp_path, url, ports, f"{name}-stream", headers, env,
                                 drills="control,stream-cut", stream=True, model=model)
    assert runs["control"]["verdict"] == "passed", out
    assert rates(runs["stream-cut"])["cut_not_success"] == (TRIALS, 0, 0), out
