"""``explore --through``: your service, its storage behind a holding proxy (and ``replay`` of
such a repro).

The flow: the storage answers in its protocol → the proxy listens → the service starts
(``--service-cmd``, pointed at the proxy) or is already running → it is healthy → a warm-up
schedule proves its storage traffic comes through the proxy → the search → shrink, repro,
replay once. Each check that fails is exit 2 with what was seen and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.domain.errors import ConfigError
from harness.domain.stream import AddTarget, Folder, Live, ShardEvidence
from harness.domain.words import counted
from harness.explore.choices import PrefixChoices
from harness.explore.found import Ticker, clean_event, violation_event
from harness.explore.http_workloads import HTTP_WORKLOADS, http_builder
from harness.explore.merge import search_evidence
from harness.explore.pct import bound
from harness.explore.plan import SmallestDraw
from harness.explore.proxy import Proxy, Upstream
from harness.explore.replay import replay_repro
from harness.explore.search import search
from harness.explore.service import ServiceProcess, check_storage, parse_listen, wait_healthy
from harness.explore.through import ThroughController
from harness.scenarios.history import pairs
from harness.scenarios.targets import open_target
from harness.scenarios.targets.base import redact

if TYPE_CHECKING:
    from harness.explore.controller import ScheduleRun
    from harness.explore.entry import ExploreSettings, ReproReplaySettings
    from harness.explore.replay import Replayed
    from harness.explore.repro import Repro
    from harness.explore.search import Build, Found, SearchSettings

DEFAULT_SETTLE_MS = 100.0


@contextmanager
def serving(*, target_text: str | None, profile: str | None, tokens_file: str | None,
            storage: str, listen: str | None, service_cmd: str | None, health_path: str,
            settle_ms: float, log: Callable[[], Path] | Path,
            say: Any = print) -> Iterator[tuple[ThroughController, Proxy, str]]:
    """Proxy up, service up and healthy, controller ready; everything stopped on the way out."""

    if not target_text or not target_text.strip().startswith(("http://", "https://")):
        raise ConfigError(f"{redact(target_text or '')!r} is not your service's base URL",
                          field="--target", fix="pass --target http://HOST:PORT (the service "
                          "explore sends its requests to)")
    if not settle_ms > 0:
        raise ConfigError(f"{settle_ms:g} ms is not a settle time", field="--settle-ms",
                          fix="give a number of milliseconds above 0 (default 100)")
    upstream = Upstream.parse(storage)
    check_storage(upstream)
    address = parse_listen(listen)
    target = open_target(target_text, tokens_file=tokens_file, profile=profile)
    with ExitStack() as stack:
        stack.callback(target.close)
        proxy = stack.enter_context(Proxy(upstream, listen=address))
        say(f"proxy: {redact(proxy.url)} → {redact(upstream.url)}  (the service must use the "
            "proxy's URL; it is in $HARNESS_PROXY_URL)")
        service = None
        if service_cmd:
            service = ServiceProcess(service_cmd, proxy.url, log() if callable(log) else log)
            stack.callback(service.stop)
            say(f"service: {service.shown}  (output: {service.log})")
        wait_healthy(target.urls[0], health_path, service,  # type: ignore[attr-defined]
                     check=lambda: _problems(proxy))
        controller = stack.enter_context(ThroughController(target, proxy, settle_ms=settle_ms))
        yield controller, proxy, target.description


def _problems(proxy: Proxy, kinds: tuple[str, ...] = ("unreachable", "not_protocol")) -> None:
    found = [p for p in proxy.problems if p.kind in kinds]
    if found:
        raise ConfigError("the proxy could not do its work:\n" + "\n".join(
            f"  - {p.what}" for p in found), field="--through", fix=found[0].fix)


def warm_up(controller: ThroughController, proxy: Proxy, build: Build, workload: str,
            say: Any = print) -> ScheduleRun:
    """One schedule of the smallest plan: storage commands must reach the proxy."""

    plan = build("double-click" if workload == "all" else workload, SmallestDraw(), 2)
    outcome = controller.run(plan, PrefixChoices())
    _problems(proxy, ("unreachable", "not_protocol", "tls_refused") if not outcome.meta[
        "commands"] else ("unreachable", "not_protocol"))
    if not outcome.meta["commands"]:
        answers = sorted({f"{p.value.get('status', 'ok') if p.type != 'ok' else 'ok'}"
                          for p in pairs(outcome.history) if p.invoke.process != "observer"})
        raise ConfigError(
            f"the first schedule sent {len(plan.racing_clients())} concurrent requests "
            f"(answers: {', '.join(answers) or 'none'}) and no storage command reached the proxy "
            f"at {redact(proxy.url)} ({proxy.connections} connections): the service is not "
            "using it, so nothing could be scheduled", field="--through",
            fix=f"point the service's storage URL at {redact(proxy.url)}: start it with "
            "--service-cmd '… {proxy}' (or read $HARNESS_PROXY_URL), or configure it yourself "
            "and pass --listen HOST:PORT to keep the proxy at that address")
    if outcome.meta["settles_expired"]:
        say(f"note: in the first schedule {counted(outcome.meta['settles_expired'], 'settle')} "
            "expired: "
            "a request did something for longer than --settle-ms without touching its "
            "storage (such choices are recorded as nondeterministic); raise --settle-ms")
    return outcome


def through_info(s: ExploreSettings, settle_ms: float) -> dict[str, Any]:
    """What ``replay`` needs to set the proxy and the service up again (no passwords)."""

    return {"storage": redact(s.through or ""), "listen": s.listen,
            "service_cmd": redact(s.service_cmd) if s.service_cmd else None,
            "target_profile": str(s.target_profile) if s.target_profile else None,
            "tokens_file": str(s.tokens_file) if s.tokens_file else None,
            "health_path": s.health_path, "settle_ms": settle_ms}


def pct_line(found: Found, settings: SearchSettings) -> str:
    p = bound(found.pct_clients, found.pct_steps, settings.depth)
    miss = (1 - p) ** max(1, found.progress.schedules)
    d = settings.depth
    formula = f"1/({found.pct_clients}·{found.pct_steps}{'^' + str(d - 1) if d > 2 else ''})"
    return (f"PCT depth {d} (probabilistic concurrency testing: each client gets a random "
            f"priority, changed at {d - 1} random step{'s' if d > 2 else ''}): a race that "
            f"needs {d} steps in one particular order is caught by each schedule with "
            f"probability at least {formula} = {p:.2%} ({found.pct_clients} clients, "
            f"{found.pct_steps} steps); if there is one, the {found.progress.schedules} "
            f"schedule{'s' if found.progress.schedules != 1 else ''} run all miss it with "
            f"probability at most {miss:.2%}")


def through_events(s: ExploreSettings, settings: SearchSettings, folder: Folder,
                   live: Live) -> Iterator[Any]:
    """The search through the service's storage: its target, then its explore result."""
    settle = s.settle_ms if s.settle_ms is not None else DEFAULT_SETTLE_MS
    limit = (f"{settings.budget} schedules" if settings.budget is not None
             else f"{settings.time_limit:g} s")
    with serving(target_text=s.target, profile=s.target_profile,
                 tokens_file=s.tokens_file, storage=s.through or "", listen=s.listen,
                 service_cmd=s.service_cmd, health_path=s.health_path or "/healthz",
                 settle_ms=settle, log=lambda: folder() / "explore-service.log",
                 say=live.say) as (controller, proxy, target):
        yield AddTarget(target)
        capabilities = set(controller.target.capabilities)
        profile = getattr(controller.target, "profile", None)
        if profile is not None and profile.in_flight is not None:
            capabilities.add("in_flight")
        build = http_builder(capabilities)
        if settings.workload == "handler-failure" and "handler_faults" not in capabilities:
            raise ConfigError("the handler-failure workload needs a fault the profile declares",
                              field="--workload", fix="declare faults: handler_error: in the "
                              "profile, or choose another workload")
        depth = f" (depth {settings.depth})" if settings.choices == "pct" else ""
        live.say(f"target {target} through {proxy.upstream.kind}; workload "
                 f"{settings.workload}; clients ≤ {settings.clients}; budget {limit}; "
                 f"{settings.choices} choices{depth}; settle {settle:g} ms")
        warm_up(controller, proxy, build, settings.workload, live.say)
        ticker = Ticker(live.say, settings.budget)
        found = search(controller, settings, ticker, build=build,
                       workloads=[w for w in HTTP_WORKLOADS if w != "handler-failure"
                                  or "handler_faults" in capabilities])
        ticker.final()
        _problems(proxy)
        if settings.choices == "pct":
            live.say(pct_line(found, settings))
        if found.outcome is None:
            yield clean_event(found, settings, target)
        else:
            yield violation_event(controller, found, settings, target, folder=folder,
                                  say=live.say, shrinking=s.shrink,
                                  commit_steps=s.commit_steps, through=through_info(s, settle))
        if s.shard is not None:
            yield ShardEvidence(search_evidence(found, settings))


def replay_through(s: ReproReplaySettings, repro: Repro, folder: Folder,
                   live: Live) -> Generator[Any, None, tuple[Replayed, str]]:
    """Set the proxy and the service up as the repro says (the settings override), replay:
    its target, then (returned) the replay and the target."""

    through = repro.through or {}
    storage = s.through or str(through.get("storage"))
    if "***" in storage:
        raise ConfigError("the repro's storage URL had its password removed", field="--through",
                          fix="pass --through with the full URL")
    settle = s.settle_ms or float(through.get("settle_ms") or DEFAULT_SETTLE_MS)
    with serving(target_text=s.target or repro.target,
                 profile=s.target_profile or through.get("target_profile"),
                 tokens_file=s.tokens_file or through.get("tokens_file"), storage=storage,
                 listen=s.listen or through.get("listen"),
                 service_cmd=s.service_cmd or through.get("service_cmd"),
                 health_path=s.health_path or str(through.get("health_path") or "/healthz"),
                 settle_ms=settle, log=lambda: folder() / "replay-service.log",
                 say=live.say) as (controller, _, target):
        yield AddTarget(target)
        live.say(f"replaying {s.path} on {target} through {controller.proxy.upstream.kind} "
                 f"({len(repro.decisions)} recorded decisions)")
        return replay_repro(controller, repro), target
