"""Run folders: ``<report dir>/runs/<UTC time>-<scenario>/`` with everything ``replay`` needs.

``history.jsonl`` (one op per line), ``schedule.jsonl`` (one executed event per line, with the
enabled events where a choice was made), ``results.json`` (verdicts, seed, target, timings) and
``scenario.yaml`` (the scenario exactly as it ran).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.domain.errors import ConfigError
from harness.domain.redaction import redact
from harness.domain.verdicts import STATUS_WORD
from harness.scenarios.history import write_jsonl
from harness.scenarios.runner import RunResult

FORMAT = "failover-harness/run-v1"
FILES = ("history.jsonl", "schedule.jsonl", "results.json", "scenario.yaml")


def replay_command(path: Path | str, target: str, extra: list[str] | None = None) -> str:
    """The exact shell command that replays ``path`` on ``target``."""
    words = ["failover-harness", "replay", str(path), "--target", target, *(extra or [])]
    return " ".join(shlex.quote(w) for w in words)


def unique_folder(parent: Path, name: str) -> Path:
    """``parent/name``, or ``name-2``, ``name-3``… if it is taken."""
    candidate, n = parent / name, 2
    while candidate.exists():
        candidate, n = parent / f"{name}-{n}", n + 1
    return candidate


def write_run(
    result: RunResult,
    report_folder: Path,
    *,
    started: datetime | None = None,
    replay_extra: list[str] | None = None,
) -> Path:
    """Write ``result``'s run folder under ``report_folder/runs`` (``report_folder``: the
    command's timestamped report folder, not the ``--report-dir`` parent) and return it."""
    started = started or datetime.now(UTC)
    stamp = started.astimezone(UTC).strftime("%Y%m%dT%H%M%S.%f")[:-3] + "Z"
    runs = report_folder / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    folder = unique_folder(runs, f"{stamp}-{result.scenario.name}")
    folder.mkdir()
    write_jsonl(folder / "history.jsonl", (op.to_line() for op in result.history))
    write_jsonl(folder / "schedule.jsonl",
                (json.dumps(e, separators=(",", ":"), ensure_ascii=False)
                 for e in result.schedule))
    source = Path(result.scenario.source)
    text = source.read_text(encoding="utf-8") if source.is_file() else ""
    (folder / "scenario.yaml").write_text(redact(text), encoding="utf-8")
    result.folder = folder
    command = replay_command(folder, result.target, replay_extra)
    document = results_document(result, started=started, replay=command)
    (folder / "results.json").write_text(  # no secret, even one the service echoed
        redact(json.dumps(document, indent=2, ensure_ascii=False)) + "\n", encoding="utf-8"
    )
    return folder


def results_document(result: RunResult, *, started: datetime, replay: str) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "scenario": result.scenario.name,
        "scenario_file": result.scenario.source,
        "status": STATUS_WORD[result.status],  # the words run folders always kept
        "reason": result.reason,
        "target": result.target,
        "target_kind": result.target_kind,
        "seed": result.seed,
        "run_id": result.run_id,
        "started_at": started.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "elapsed_s": round(result.elapsed_s, 6),
        "virtual_seconds": result.virtual_seconds,
        "ops": len(result.history),
        "checks": [c.to_json() for c in result.checks],
        "unrun": result.unrun,
        "fix": result.fix,
        "warnings": list(result.warnings),
        "replay": replay,
        **({"arrival": result.arrival, "arrivals": result.arrivals} if result.arrival else {}),
        **({"trial": result.trial} if result.trial else {}),
    }


@dataclass(frozen=True, slots=True)
class RecordedRun:
    """A run folder read back."""

    folder: Path
    results: dict[str, Any]
    history_lines: list[str]
    schedule: list[dict[str, Any]]

    @property
    def scenario_file(self) -> Path:
        return self.folder / "scenario.yaml"


def read_run(folder: Path) -> RecordedRun:
    """Read a run folder; a missing or damaged file is a :class:`ConfigError` naming it."""
    for name in FILES:
        if not (folder / name).is_file():
            raise ConfigError(
                f"{name} is missing, so this is not a complete run folder", file=str(folder),
                fix="point replay at a folder under reports/runs/ (or at a scenario file)",
            )
    try:
        results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        schedule = [json.loads(line) for line in
                    (folder / "schedule.jsonl").read_text(encoding="utf-8").splitlines()
                    if line.strip()]
    except ValueError as exc:
        raise ConfigError(f"not valid JSON: {exc}", file=str(folder),
                          fix="restore the run folder as failover-harness wrote it") from None
    if not isinstance(results, dict) or results.get("format") != FORMAT:
        raise ConfigError(f"results.json is not a {FORMAT} document",
                          file=str(folder / "results.json"),
                          fix="point replay at a run folder written by scenarios run")
    lines = (folder / "history.jsonl").read_text(encoding="utf-8").splitlines()
    return RecordedRun(folder, results, lines, schedule)
