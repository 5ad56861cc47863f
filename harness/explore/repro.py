"""Repro folders: ``<report dir>/repro/<id>/``, everything needed to see and replay a race.

==================  =============================================================================
``scenario.yaml``   the shrunk plan and its decisions: ``failover-harness replay`` runs it exactly
``schedule.jsonl``  every event (a statement step or a timer), with the options where one was chosen
``history.jsonl``   the operations, as the scenario engine writes them (the same checkers read it)
``explanation.txt`` the promise, the minimal steps, who won, what was lost, the replay command
``results.json``    verdicts, seed, schedule number, target (no password), shrinking figures
==================  =============================================================================
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from harness.domain.errors import ConfigError
from harness.domain.redaction import redact
from harness.domain.verdicts import FROM_STATUS_WORD, STATUS_WORD, Promise
from harness.explore.choices import decisions
from harness.explore.controller import ScheduleRun
from harness.explore.explain import explanation
from harness.explore.plan import Plan
from harness.scenarios.history import write_jsonl
from harness.scenarios.runfolder import replay_command, unique_folder

FORMAT = "failover-harness/explore-v1"
SCENARIO = "scenario.yaml"


def write_repro(
    outcome: ScheduleRun,
    report_folder: Path,
    *,
    target: str,
    found: dict[str, Any],
    shrink: dict[str, Any] | None = None,
    replayable: bool = True,
    through: dict[str, Any] | None = None,
) -> Path:
    """Write ``outcome``'s repro folder under ``report_folder/repro`` (the command's
    timestamped report folder, not the ``--report-dir`` parent) and return it.

    ``found`` says how it was found (seed, schedule number, choices, schedules explored);
    ``shrink`` gives the shrinking figures. A ``--stress`` finding is not replayable: its folder
    has the history and the explanation, no schedule. ``through`` says how a service was
    explored through its storage (storage URL without password, proxy address, service
    command, profile, settle time), so ``replay`` can set it up again.
    """
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%f")[:-3] + "Z"
    repro = report_folder / "repro"
    repro.mkdir(parents=True, exist_ok=True)
    folder = unique_folder(repro, f"{stamp}-{folder_name(outcome)}")
    folder.mkdir()
    replay = (replay_command(folder, target) if replayable and through is None
              else f"failover-harness replay {folder}" if replayable else None)
    write_jsonl(folder / "history.jsonl", outcome.history_lines())
    if replayable:
        write_jsonl(folder / "schedule.jsonl",
                    (json.dumps(e, separators=(",", ":"), ensure_ascii=False)
                     for e in outcome.schedule))
        (folder / SCENARIO).write_text(redact(scenario_text(outcome, target, found, through)),
                                       encoding="utf-8")
    text = explanation(outcome, target=target, found=found, shrink=shrink, replay=replay)
    (folder / "explanation.txt").write_text(redact(text), encoding="utf-8")
    results = {
        "format": FORMAT,
        "status": STATUS_WORD[outcome.status],  # the words repro folders always kept
        "workload": outcome.plan.workload,
        "target": target,
        "replayable": replayable,
        "found": found,
        "shrink": shrink,
        "steps": outcome.steps,
        "timers": outcome.timers,
        "waits": outcome.waits,
        "events": len(outcome.schedule),
        "ops": len(outcome.history),
        "virtual_seconds": outcome.virtual_seconds,
        "broken": outcome.broken,
        "checks": [c.to_json() for c in outcome.checks],
        "replay": replay,
        "through": through,
        "meta": outcome.meta,
    }
    (folder / "results.json").write_text(  # no secret, even one the service echoed
        redact(json.dumps(results, indent=2, ensure_ascii=False)) + "\n", encoding="utf-8")
    return folder


MAX_NAME = 100


def shows(outcome: ScheduleRun) -> str:
    """What the race's history shows, in the workloads' words: ``handler-failure`` only when an
    armed fault made a create answer a server error, ``mismatch`` when one key carried two
    intents, ``double-click`` when one key was sent more than once; else the workload explored."""
    creates = [op for op in outcome.history if op.f == "create"]
    armed = any(op.f == "fault" for op in outcome.history)  # a failure the workload caused
    if armed and any(op.type == "fail" and int(op.value.get("status") or 0) >= 500
                     for op in creates):
        return "handler-failure"
    by_key: dict[str, set[str]] = {}
    for op in creates:
        if op.type == "invoke" and op.value.get("key") is not None:
            by_key.setdefault(str(op.value["key"]), set()).add(
                str(op.value.get("fingerprint", op.value.get("intent", ""))))
    sent = [op.value.get("key") for op in creates if op.type == "invoke"]
    if any(len(intents) > 1 for intents in by_key.values()):
        return "mismatch"
    if len(sent) != len(set(sent)):
        return "double-click"
    return outcome.plan.workload


def folder_name(outcome: ScheduleRun) -> str:
    """``<what it shows>-<every broken promise>`` (cut to a readable length)."""
    broken = "+".join(outcome.broken) or "unknown"
    name = f"{shows(outcome)}-{broken}"
    return name[:MAX_NAME]


def scenario_text(outcome: ScheduleRun, target: str, found: dict[str, Any],
                  through: dict[str, Any] | None = None) -> str:
    """The replayable scenario: the plan and the decisions, as YAML with a comment header."""
    checker = ", ".join(outcome.broken) or "none"
    document = {
        "format": FORMAT,
        "name": folder_name(outcome),
        "description": (f"explore --workload {found.get('workload', outcome.plan.workload)} "
                        f"--seed {found.get('seed')}: schedule #{found.get('schedule')}, shrunk "
                        f"to {outcome.steps} steps; breaks {checker}"),
        "target": target,
        "commit_steps": bool(found.get("commit_steps", False)),
        **({"through": through} if through else {}),
        "plan": outcome.plan.to_json(),
        "schedule": decisions(outcome.schedule),
    }
    head = ("# failover-harness explore: a race, shrunk. Replay it exactly with\n"
            "#   failover-harness replay <this file or its folder> [--target …]\n"
            "# schedule: the event chosen at each point where more than one could run "
            "(statements are 'client: query', timers 'timer @Ts what').\n")
    return head + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)


@dataclass(frozen=True, slots=True)
class Repro:
    """A repro read back: the plan and decisions, and the recorded run when there is one."""

    source: Path
    plan: Plan
    decisions: list[str]
    target: str | None
    history_lines: list[str] | None
    schedule: list[dict[str, Any]] | None
    status: Promise | None
    commit_steps: bool = False
    through: dict[str, Any] | None = None  # explored through the service's storage


def is_explore_repro(path: Path) -> bool:
    """True for a repro folder or its scenario file (written by explore)."""
    candidate = path / SCENARIO if path.is_dir() else path
    if not candidate.is_file():
        return False
    try:
        with candidate.open(encoding="utf-8") as source:
            head = source.read(4096)
    except (OSError, UnicodeDecodeError):
        return False
    return f"format: {FORMAT}" in head


def read_repro(path: Path) -> Repro:
    """Read a repro folder (or its ``scenario.yaml``); damage is a ConfigError naming the file."""
    folder = path if path.is_dir() else path.parent
    scenario = path / SCENARIO if path.is_dir() else path
    if not scenario.is_file():
        raise ConfigError(f"{SCENARIO} is missing, so this repro cannot be replayed",
                          file=str(folder), fix="point replay at a folder under reports/repro/ "
                          "written by explore (a --stress finding is not replayable)")
    try:
        data = yaml.safe_load(scenario.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(f"not valid YAML: {getattr(exc, 'problem', exc)}", file=str(scenario),
                          line=mark.line + 1 if mark else None,
                          fix="restore the file as explore wrote it") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ConfigError(f"not an explore repro (format: {FORMAT})", file=str(scenario),
                          fix="point replay at a folder under reports/repro/")
    schedule = data.get("schedule")
    if not isinstance(schedule, list) or not all(isinstance(s, str) for s in schedule):
        raise ConfigError("schedule must be a list of event labels", file=str(scenario),
                          field="schedule", fix="restore the file as explore wrote it")
    plan = Plan.from_json(data.get("plan"), where=f"{scenario}: plan")
    history = schedule_entries = status = None
    if scenario.parent == folder and (folder / "history.jsonl").is_file():
        history = (folder / "history.jsonl").read_text(encoding="utf-8").splitlines()
    if (folder / "schedule.jsonl").is_file():
        try:
            schedule_entries = [json.loads(line) for line in
                                (folder / "schedule.jsonl").read_text("utf-8").splitlines()
                                if line.strip()]
        except ValueError as exc:
            raise ConfigError(f"not valid JSON lines: {exc}", file=str(folder / "schedule.jsonl"),
                              fix="restore the file as explore wrote it") from None
    if (folder / "results.json").is_file():
        try:
            status = json.loads((folder / "results.json").read_text("utf-8")).get("status")
            status = FROM_STATUS_WORD.get(status)  # a word it never wrote: nothing to compare
        except ValueError:
            status = None
    target = data.get("target")
    through = data.get("through")
    if through is not None and not (isinstance(through, dict) and through.get("storage")):
        raise ConfigError("through must say at least storage: <URL>", file=str(scenario),
                          field="through", fix="restore the file as explore wrote it")
    return Repro(scenario, plan, list(schedule), str(target) if target else None, history,
                 schedule_entries, status, bool(data.get("commit_steps", False)), through)
