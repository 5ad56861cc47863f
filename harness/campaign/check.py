"""``check``'s entry point: the main job, in one stream.

With a target (and its profile, tokens file): every scenario the target's capabilities allow
(the others are not applicable, never passed), the detection suite at its default trials (or
``trials``), and with a ``drill:`` section in the profile, the drills, which judge the scenarios
a jobs-only service cannot play (:mod:`harness.campaign.check_drill`). Without one, the
self-check: the scenarios against the reference store and every mutant (the detection matrix).
Then, either way, the providers: certified where the lock cannot speak for a link (no record,
or one made for another config or contract, or expired), or all of them when asked
(``certify="always"``), or none (``"never"``); then the gate's verdict on the auto links.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.campaign.certification import certify_pairings
from harness.campaign.check_drill import open_check_drill
from harness.campaign.gate import gate_event
from harness.contracts.certifier import plan
from harness.contracts.standing import State
from harness.contracts.workspace import Workspace
from harness.domain.errors import ConfigError
from harness.domain.redaction import register_target_secrets
from harness.domain.shard import Shard
from harness.domain.stream import QUIET, Begin, Folder, Live, Note, Sharded, entry_point
from harness.domain.words import counted
from harness.gateways.options import ProvidersSource
from harness.gateways.sources import audits_for, source_file
from harness.project import MAX_TRIALS
from harness.scenarios.emit import detection_matrix, scenario_run
from harness.scenarios.entry import (
    TargetSettings,
    load_scenarios,
    public_target,
    scenarios_events,
    shipped_scenarios,
    target_notes,
    target_secrets,
)
from harness.scenarios.matrix import REFERENCE
from harness.scenarios.matrix import detection_matrix as run_matrix
from harness.scenarios.model import Scenario
from harness.scenarios.runfolder import replay_command, write_run
from harness.scenarios.sharding import refuse_shard, sharded, unit
from harness.store.mutants import MUTANTS

Certify = Literal["stale", "always", "never"]
#: a link the lock cannot speak for: certified by a plain ``check``
UNCERTIFIED = (State.MISSING, State.STALE, State.EXPIRED)


@dataclass(frozen=True, kw_only=True)
class CheckSettings(TargetSettings):
    """``failover-harness check``'s settings: the command line over the project file."""

    trials: int | None = None  # detection suite trials per pattern (default: each scenario's)
    scenarios: tuple[Path, ...] | None = None  # given paths replace the shipped suites
    local: Path | None = None  # a scenarios/ folder of the project: adds (or replaces by name)
    db: str | None = None  # self-check only: the database (default: a temporary SQLite file)
    source: ProvidersSource = field(
        default_factory=lambda: ProvidersSource(providers=Path("providers.yaml")))
    providers_explicit: bool = False  # named by the user: it must exist
    certify: Certify = "stale"
    env: Mapping[str, str] = field(default_factory=dict)  # the drill's ${VAR}s


def checked(settings: CheckSettings) -> CheckSettings:
    """``settings``, or ConfigError naming the option that is wrong."""
    if settings.trials is not None and not 1 <= settings.trials <= MAX_TRIALS:
        raise ConfigError(f"{settings.trials} trials", field="--trials",
                          fix=f"give a whole number from 1 to {MAX_TRIALS}")
    if settings.target and settings.db:
        raise ConfigError("--db chooses the database of the self-check; with --target the "
                          "scenarios run against your service", field="--db",
                          fix="drop --db, or drop --target")
    return settings


@entry_point
def run_check(settings: CheckSettings, *, folder: Folder, live: Live = QUIET) -> Iterator[Any]:
    """``failover-harness check``: scenarios, drills, certification and the gate."""
    s = checked(settings)
    workspace = _open_workspace(s)  # bad config fails here, before any work
    if s.target:
        yield from _on_target(s, folder, live)
    else:
        register_target_secrets(s.db)
        scenarios, suites = _suites(s, with_detection=False)
        yield Begin(targets=(s.db or "sqlite (embedded)",))
        if s.shard is not None:
            yield _stamp(s, scenarios)
        live.say(f"check: {counted(len(scenarios), 'scenario')} on the reference store and its "
                 f"mutants; suites: {suites}" + (f"; shard {s.shard}" if s.shard else ""))
        yield from _self_check(s, scenarios, folder, live)
    if s.shard is not None and s.shard.index != 1:  # one shard speaks for the providers
        live.say(f"certification and the gate: run by shard 1/{s.shard.total}")
    elif workspace is None:
        yield Note(f"no {s.source.providers}: certification and gate skipped")
    else:
        yield from _providers(s, workspace, live)


def _stamp(s: CheckSettings, scenarios: list[Scenario]) -> Sharded:
    """A shard's stamp: the settings, every scenario file, the profile and the providers'
    files (what decides the verdicts), the scenarios' order."""
    files: list[str | Path] = [x.source for x in scenarios]
    files += [s.target_profile or "", s.source.providers]
    return sharded("check", s.shard or Shard.ALL, s, files,
                   order=[unit("scenario", x.name) for x in scenarios])


def _open_workspace(s: CheckSettings) -> Workspace | None:
    optional = s.certify == "never" or (s.target and not s.providers_explicit)
    if optional and not source_file(s.source.providers).exists():
        return None
    return s.source.open()


def _on_target(s: CheckSettings, folder: Folder, live: Live) -> Iterator[Any]:
    """Every scenario on the user's service (the detection suite as trial series), the drills
    first when its profile has a ``drill:`` section."""
    scenarios, suites = _suites(s, with_detection=True)
    target = s.open()
    drill = None
    try:
        target_secrets(target, s.target)
        # docs/drill.md; the fakes listen before the preflight's creates reach them
        drill = open_check_drill(s.target, s.target_profile, s.env, target)
        target.preflight()  # out of reach, refusing an owner or every create: exit 2 now
        if drill is not None and s.shard is not None and not s.shard.whole:
            raise refuse_shard(
                "check --target with a profile's drill: section (the drill judges scenarios "
                "over all its intents)",
                "shard `scenarios run` and `drill` instead, or run this check whole")
        yield Begin(targets=(target.description,))
        if s.shard is not None:
            yield _stamp(s, scenarios)
        live.say(f"check: {counted(len(scenarios), 'scenario')} against {target.description}; "
                 f"suites: {suites}")
        yield from target_notes(target)
        played = _scenarios(s, scenarios, target, folder)
        if drill is None:
            yield from played
        else:  # both halves at once: timeouts, late results judged by the drill
            yield from drill.run(live, played, s.trials)
    finally:
        target.close()
        if drill is not None:
            drill.close()


def _scenarios(s: CheckSettings, scenarios: list[Scenario], target: Any,
               folder: Folder) -> Iterator[Any]:
    """Every scenario on the user's service; the detection suite as trial series, at its
    default trials (each scenario's ``arrival.trials``, else 1), or ``trials``."""
    def plan(scenario: Scenario) -> tuple[bool, int | None]:
        detection = in_detection_suite(scenario)
        return detection, s.trials if detection else None

    return scenarios_events(scenarios, target, s, folder, plan)


def in_detection_suite(scenario: Scenario) -> bool:
    """Judged by its rate over trials: it has arrival patterns, or it is in a detection/
    folder (the shipped detection suite)."""
    return scenario.arrival is not None or Path(scenario.source).parent.name == "detection"


def _suites(s: CheckSettings, *, with_detection: bool) -> tuple[list[Scenario], str]:
    """The scenarios to run, and the suites they come from, as the live output names them.

    The shipped scenarios (and, with a target, the detection suite) always run; the project's
    ``scenarios/`` folder (``local``) adds its scenarios (and its ``detection/``), a local one
    named like a shipped one taking its place (``init`` copies the shipped ones: the user may
    have edited them). Only explicit paths replace the shipped suites."""
    if s.scenarios:
        scenarios = load_scenarios(s.scenarios)
        named = ", ".join(str(p) for p in s.scenarios)
        return scenarios, f"{named} ({len(scenarios)}; given paths replace the shipped suites)"
    shipped = shipped_scenarios()
    suites: list[tuple[str, list[Scenario]]] = [("shipped", load_scenarios([shipped]))]
    if with_detection and (shipped / "detection").is_dir():
        suites.append(("detection", load_scenarios([shipped / "detection"])))
    local = s.local
    if local is not None and local.is_dir() and local.resolve() != shipped.resolve():
        extra = [local / "detection"] if with_detection and (local / "detection").is_dir() else []
        mine = load_scenarios([local, *extra])
        names = {m.name for m in mine}
        replaced = sum(1 for _, group in suites for x in group if x.name in names)
        suites = [(name, [x for x in group if x.name not in names]) for name, group in suites]
        note = f", {replaced} in place of shipped ones of the same name" if replaced else ""
        suites.append((f"local {local}/", mine))
        return [x for _, group in suites for x in group], ", ".join(
            f"{name} ({len(group)}{note if name.startswith('local') else ''})"
            for name, group in suites)
    return [x for _, group in suites for x in group], ", ".join(
        f"{name} ({len(group)})" for name, group in suites)


def _self_check(s: CheckSettings, scenarios: list[Scenario], folder: Folder,
                live: Live) -> Iterator[Any]:
    """The scenarios on the reference store (a run each) and every mutant (the matrix)."""
    shard = s.shard
    with live.bar("scenarios × stores", len(scenarios) * (1 + len(MUTANTS))) as advance:
        matrix = run_matrix(scenarios, s.db, seed=s.seed,
                            on_cell=lambda _store, _result: advance(1),
                            owns=None if shard is None else shard.owns)
    target = public_target(s.db or "sqlite")
    for scenario in scenarios:
        result = matrix.cells.get((REFERENCE, scenario.name))
        if result is None:  # another shard's
            continue
        replay = None
        if result.status in ("broken", "unknown"):
            replay = replay_command(write_run(result, folder()), target)
        yield scenario_run(result, replay=replay)
    yield detection_matrix(matrix)


def _providers(s: CheckSettings, workspace: Workspace, live: Live) -> Iterator[Any]:
    """Certify the links the lock cannot speak for (or all, or none, as asked); the gate."""
    pairings = plan(workspace.providers, workspace.contracts,
                    providers_path=str(s.source.providers))
    if s.certify == "stale":
        eligibility = workspace.eligibility()
        chosen = [p for p in pairings
                  if eligibility.standing(p.provider.id, p.contract.id).state in UNCERTIFIED]
    else:
        chosen = pairings if s.certify == "always" else []
    lock = workspace.lock.path
    if chosen:
        why = ("as asked (--certify)" if s.certify == "always" else
               f"the lock ({lock}) has no current record for "
               + ", ".join(f"{p.provider.id}/{p.contract.id}" for p in chosen))
        live.say(f"certifying {counted(len(chosen), 'link')}: {why}")
        # through a gateway: what the provider got, and what a config in a header makes it send
        audits = audits_for(workspace.providers, chosen, workspace.providers_path)
        yield from certify_pairings(workspace, chosen, s.source, live, audits=audits,
                                    headline=False)
    elif pairings:
        said = ("not certifying (--no-certify): gating on the lock as it is"
                if s.certify == "never" else
                f"not certifying: every link has a current record in {lock} (its config and "
                "contract unchanged); gating on it (--certify certifies again)")
        live.say(said)
        if s.certify == "stale":  # the report says why it holds no certification
            yield Note(said)
    yield gate_event(workspace, s.source)
