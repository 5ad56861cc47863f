"""Load scenario YAML files: JSON Schema validation, then the cross-references, into a Scenario.

Every problem is a :class:`ConfigError` naming the file, the line, the field and what to write
instead (the CLI turns it into exit 2).
"""

from __future__ import annotations

import difflib
import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from harness.domain import HarnessError, Intent
from harness.domain.errors import ConfigError
from harness.scenarios.model import (
    Action,
    ArrivalSpec,
    Cancel,
    Crash,
    Create,
    Fault,
    IntentSpec,
    ListAttempts,
    ListRaces,
    ProviderScript,
    Read,
    RunAttempt,
    Scenario,
    Step,
)
from harness.yamlsrc import YamlSource, load_yaml

ACTION_KEYS = ("create", "read", "attempt", "cancel", "crash", "attempts", "races", "fault")
ATTEMPT_EXPECT_KEYS = ("start", "dispatched", "timed_out", "succeeded", "failed")
DEFAULT_ACTOR = "alice"


@cache
def scenario_schema() -> dict[str, Any]:
    """The JSON Schema every scenario file must satisfy (shipped as package data)."""
    text = resources.files("harness.scenarios").joinpath("scenario.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(scenario_schema())


def scenario_files(paths: list[Path]) -> list[Path]:
    """The scenario files named by ``paths`` (folders contribute their ``*.yaml``), sorted."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted([*path.glob("*.yaml"), *path.glob("*.yml")]))
        elif path.is_file():
            found.append(path)
        else:
            raise ConfigError(
                "no such file or folder", file=str(path),
                fix="pass scenario files or a folder of them (default: scenarios/)",
            )
    if not found:
        raise ConfigError(
            "no scenario files found", file=", ".join(str(p) for p in paths),
            fix="put <name>.yaml scenario files there (see docs/scenarios.md)",
        )
    return found


def load_scenario(path: Path) -> Scenario:
    """Read, validate and build the scenario in ``path``."""
    return scenario_from_source(load_yaml(path))


def scenario_from_source(src: YamlSource) -> Scenario:
    if not isinstance(src.data, dict):
        raise src.error(
            "a scenario must be a YAML mapping", fix="start with name:, steps: and checkers:"
        )
    errors = sorted(_validator().iter_errors(src.data), key=_error_rank)
    if errors:
        raise _explain(src, errors[0])
    return _Builder(src).build()


# -- schema errors into what to write ------------------------------------------------------------
def _leaf(error: ValidationError) -> ValidationError:
    """For anyOf/oneOf, the error of the branch that matches the instance's type best."""
    if error.validator in ("anyOf", "oneOf") and error.context:
        typed = [e for e in error.context if e.validator != "type"]
        pool = typed or list(error.context)
        return _leaf(max(pool, key=lambda e: len(e.absolute_path)))
    return error


def _error_rank(error: ValidationError) -> tuple[int, int]:
    # The deepest error is the most specific; at equal depth an unknown field (often a typo
    # of the right one) explains more than "no action" does.
    return (-len(_leaf(error).absolute_path), 0 if error.validator == "additionalProperties" else 1)


def _example(schema: Any) -> str | None:
    if isinstance(schema, dict):
        if "x-example" in schema:
            return str(schema["x-example"])
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _example(scenario_schema()["$defs"][ref.split("/")[-1]])
    return None


def _explain(src: YamlSource, top: ValidationError) -> ConfigError:
    if top.validator == "oneOf" and isinstance(top.instance, dict) and "create" in str(top.schema):
        present = [k for k in ACTION_KEYS if k in top.instance]
        what = "no action" if not present else f"{len(present)} actions ({', '.join(present)})"
        return src.error(
            f"this step has {what}", tuple(top.absolute_path),
            fix="write exactly one of create, read, attempt, cancel, crash, attempts, races, "
            "fault; "
            "e.g. {at: 0, create: {key: click-1, intent: triage}, save: job}",
        )
    error = _leaf(top)
    loc = tuple(error.absolute_path)
    example = _example(error.schema)
    kind = error.validator
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(error.schema.get("properties", {}))
        extras = [k for k in error.instance if k not in allowed]
        key = extras[0] if extras else "?"
        close = difflib.get_close_matches(str(key), allowed, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        if not allowed:
            fix = f"remove '{key}'"
        else:
            fix = f"{hint}remove '{key}' or use one of: {', '.join(allowed)}"
        return src.error(f"unknown field '{key}'", (*loc, key), fix=fix)
    if kind == "required":
        missing = str(error.message).split("'")[1] if "'" in error.message else "?"
        sub = error.schema.get("properties", {}).get(missing, {})
        return src.error(
            f"field '{missing}' is missing", loc,
            fix=f"add {_example(sub) or missing + ': …'}",
        )
    if kind == "enum":
        options = ", ".join(str(o) for o in error.validator_value)
        close = difflib.get_close_matches(str(error.instance), [str(o) for o in
                                                                error.validator_value], n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        return src.error(
            f"{error.instance!r} is not allowed here", loc, fix=f"{hint}write one of: {options}"
        )
    if kind == "type":
        wanted = error.validator_value
        return src.error(
            f"{_show(error.instance)} is not a {wanted}", loc,
            fix=f"write {example}" if example else f"write a {wanted} here",
        )
    if kind in ("minimum", "maximum", "exclusiveMinimum", "minItems", "minLength", "pattern",
                "uniqueItems", "maxLength", "propertyNames"):
        return src.error(
            f"{_show(error.instance)}: {error.message}", loc,
            fix=f"write {example}" if example else "fix the value",
        )
    return src.error(error.message, loc, fix=f"write {example}" if example else "see docs")


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


# -- cross-references ---------------------------------------------------------------------------
class _Builder:
    def __init__(self, src: YamlSource) -> None:
        self.src = src
        self.data: dict[str, Any] = src.data

    def build(self) -> Scenario:
        data = self.data
        actors = tuple(data.get("actors") or (DEFAULT_ACTOR,))
        intents = {name: self._intent(("intents", name), v)
                   for name, v in (data.get("intents") or {}).items()}
        providers = {name: self._provider(name, v)
                     for name, v in (data.get("providers") or {}).items()}
        steps = self._steps(actors, intents, providers)
        requires = set(data.get("requires") or ())
        requires.add("jobs")
        for step in steps:
            action = step.action
            if isinstance(action, Fault):
                requires.add("handler_faults")
            elif not isinstance(action, Create | Read):
                requires.add("attempts")
            if isinstance(action, RunAttempt) and action.timeout is not None:
                requires.add("timeouts")
            if isinstance(action, Create) and action.intent.max_open_attempts > 1:
                requires.add("hedge")
        if len({s.actor for s in steps}) > 1:
            requires.add("owners")
        schedule = data.get("schedule")
        optional = list(data.get("checkers_if_exercised") or ())
        checkers = list(data["checkers"])
        for name in optional:
            if name in checkers:
                raise self.src.error(
                    f"{name} is listed under both checkers: and checkers_if_exercised:",
                    ("checkers_if_exercised",),
                    fix=f"keep {name} in one list: checkers: when the scenario always exercises "
                    "it, checkers_if_exercised: when only some targets do")
            checkers.append(name)
        if any(s.expect for s in steps) and "scripted_outcomes" not in checkers:
            checkers.append("scripted_outcomes")
        return Scenario(
            name=data["name"],
            description=str(data.get("description", "")).strip(),
            source=str(self.src.path),
            actors=actors,
            intents=intents,
            providers=providers,
            steps=tuple(steps),
            checkers=tuple(checkers),
            requires=frozenset(requires),
            seed=int(data.get("seed", 0)),
            schedule=tuple(schedule) if schedule is not None else None,
            arrival=self._arrival(steps),
            optional_checkers=frozenset(optional),
            warnings=tuple(self._absolute_versions(steps)),
        )

    def _absolute_versions(self, steps: list[Step]) -> list[str]:
        """A warning per expectation of an absolute version: API.md leaves numbering to the
        service, so on a service that starts at 0 or steps by 2 it is a false alarm."""
        out = []
        for step in steps:
            expect = step.expect or {}
            scopes = [((), expect)] + [((k,), v) for k, v in expect.items() if isinstance(v, dict)]
            for sub, fields in scopes:
                for key in ("version", "read_version"):
                    value = fields.get(key)
                    if isinstance(value, int) and not isinstance(value, bool):
                        loc = ("steps", step.index, "expect", *sub, key)
                        line = self.src.line_of(loc) or step.line
                        out.append(
                            f"{self.src.path}:{line}: expects an absolute {key} ({value}); "
                            "API.md leaves version numbers to the service, so on a service that "
                            f"numbers them otherwise this is a false alarm: write {key}: "
                            f"unchanged or {key}: rose")
        return out

    def _arrival(self, steps: list[Step]) -> ArrivalSpec | None:
        raw = self.data.get("arrival")
        if raw is None:
            return None
        patterns = tuple(raw.get("patterns") or ("burst",))
        grouped = any(s.concurrent > 1 and isinstance(s.action, Create) for s in steps)
        if patterns != ("burst",) and not grouped:
            raise self.src.error(
                "arrival patterns apply to concurrent creates, and this scenario has none",
                ("arrival", "patterns"),
                fix="add concurrent: N to a create step, or keep only arrival: {trials: N}")
        window = raw.get("window_ms")
        return ArrivalSpec(patterns=patterns, trials=int(raw.get("trials", 1)),
                           window_ms=float(window) if window is not None else None)

    def _intent(self, loc: tuple[str | int, ...], value: Any) -> IntentSpec:
        name = str(loc[-1]) if loc[0] == "intents" else "inline"
        if isinstance(value, str):
            text = value
            try:
                body = json.loads(text)
            except ValueError as exc:
                raise self.src.error(
                    f"the intent text is not JSON: {exc}", loc,
                    fix="write the exact JSON body, e.g. '{\"contract\": \"c\", \"input\": {}}'",
                ) from None
        else:
            body = value
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        try:
            intent = Intent.from_json(body)
        except HarnessError as exc:
            raise self.src.error(
                f"not a valid intent: {exc.message}", loc,
                fix="write {contract: name, input: {…}, params: {…}, policy: {…}}",
            ) from None
        return IntentSpec(
            name=name, body=body, text=text, fingerprint=intent.fingerprint,
            max_open_attempts=intent.policy.max_open_attempts,
        )

    def _provider(self, name: str, value: dict[str, Any]) -> ProviderScript:
        outcome = value["outcome"]
        loc: tuple[str | int, ...] = ("providers", name)
        if outcome == "result" and "result" not in value:
            raise self.src.error("a provider with outcome: result needs a result", loc,
                                 fix="add result: {…} (the JSON object the provider returns)")
        if outcome == "error" and "error" not in value:
            raise self.src.error("a provider with outcome: error needs an error", loc,
                                 fix="add error: {code: rate_limited, message: …}")
        if outcome != "hang" and "latency" not in value:
            raise self.src.error("the provider has no latency", loc,
                                 fix="add latency: <virtual seconds before it answers>, e.g. 5")
        return ProviderScript(
            name=name, latency=float(value.get("latency", 0)), outcome=outcome,
            result=value.get("result"), error=value.get("error"),
        )

    def _steps(
        self,
        actors: tuple[str, ...],
        intents: dict[str, IntentSpec],
        providers: dict[str, ProviderScript],
    ) -> list[Step]:
        steps: list[Step] = []
        jobs: set[str] = set()
        attempts: set[str] = set()
        owners: dict[str, str] = {}  # job or attempt name → the owner who made it
        at = 0.0
        for i, raw in enumerate(self.data["steps"]):
            loc: tuple[str | int, ...] = ("steps", i)
            err = self.src.error
            step_at = float(raw.get("at", at))
            if step_at < at:
                raise err(f"at: {step_at:g} is earlier than the step before it (at: {at:g})",
                          (*loc, "at"), fix=f"keep steps in time order: write at: {at:g} or more,"
                          " or move this step up")
            at = step_at
            kind = next(k for k in ACTION_KEYS if k in raw)
            actor = raw.get("as") or self._owner_of(raw[kind], kind, owners) or actors[0]
            if actor not in actors:
                raise err(f"actor {actor!r} is not listed under actors", (*loc, "as"),
                          fix=f"add it to actors: [{', '.join([*actors, actor])}] or use one of "
                          f"{', '.join(actors)}")
            action = self._action(loc, kind, raw[kind], intents, providers, jobs, attempts)
            concurrent = int(raw.get("concurrent", 1))
            if concurrent > 1 and kind not in ("create", "read"):
                raise err(f"concurrent: applies to create and read, not {kind}",
                          (*loc, "concurrent"), fix="remove concurrent: from this step")
            if isinstance(action, Create) and action.others and \
                    concurrent < len(action.intents):
                raise err(f"intents: lists {len(action.intents)} bodies for {concurrent} "
                          "request(s)", (*loc, "concurrent"),
                          fix=f"write concurrent: {len(action.intents)} or more (copy i sends "
                          "intents[i mod n])")
            save = raw.get("save")
            if save is not None:
                if kind != "create":
                    raise err("save: names the job of a create step", (*loc, "save"),
                              fix="remove save: here (attempts are named by attempt.name)")
                if save in jobs or save in attempts:
                    raise err(f"the name {save!r} is already used", (*loc, "save"),
                              fix="give every job and attempt its own name")
                jobs.add(save)
                owners[save] = actor
            if isinstance(action, RunAttempt):
                owners[action.name] = owners.get(action.job, actor)
            expect = raw.get("expect")
            if expect is not None:
                self._check_expect(loc, kind, expect, jobs - ({save} if save else set()))
            steps.append(Step(
                index=i, line=self.src.line_of(loc), at=at, actor=actor, action=action,
                concurrent=concurrent, save=save, expect=expect,
            ))
        return steps

    @staticmethod
    def _owner_of(value: Any, kind: str, owners: dict[str, str]) -> str | None:
        """By default a step acts as the owner of the job or attempt it names."""
        if kind == "fault":
            return None
        if kind in ("read", "attempts", "races", "crash") or (kind == "cancel"
                                                             and isinstance(value, str)):
            return owners.get(value) if isinstance(value, str) else None
        if kind == "attempt":
            return owners.get(value.get("job", ""))
        if kind == "cancel":
            return owners.get(value.get("attempt", ""))
        return None

    def _action(
        self,
        loc: tuple[str | int, ...],
        kind: str,
        value: Any,
        intents: dict[str, IntentSpec],
        providers: dict[str, ProviderScript],
        jobs: set[str],
        attempts: set[str],
    ) -> Action:
        err = self.src.error
        if kind == "fault":
            return Fault(kind=str(value))  # a profile names its faults: checked at run time

        def job_ref(name: str, where: tuple[str | int, ...]) -> str:
            if name not in jobs:
                known = ", ".join(sorted(jobs)) or "none yet"
                close = difflib.get_close_matches(name, sorted(jobs), n=1)
                hint = f"did you mean '{close[0]}'? otherwise " if close else ""
                raise err(f"no earlier step saved a job named {name!r}", where,
                          fix=f"{hint}add save: {name} to the create step before this one "
                          f"(jobs saved so far: {known})")
            return name

        def attempt_ref(name: str, where: tuple[str | int, ...]) -> str:
            if name not in attempts:
                known = ", ".join(sorted(attempts)) or "none yet"
                close = difflib.get_close_matches(name, sorted(attempts), n=1)
                hint = f"did you mean '{close[0]}'? otherwise " if close else ""
                raise err(f"no earlier attempt step is named {name!r}", where,
                          fix=f"{hint}name an earlier attempt step {name!r} "
                          f"(attempts so far: {known})")
            return name

        if kind == "create":
            where = (*loc, "create")
            if ("intent" in value) == ("intents" in value):
                raise err("a create needs exactly one of intent or intents", where,
                          fix="write intent: <name> (or intents: [a, b] for a concurrent group "
                          "whose copies alternate bodies under one key)")
            refs = value["intents"] if "intents" in value else [value["intent"]]
            chosen = []
            for n, ref in enumerate(refs):
                at = (*where, "intents", n) if "intents" in value else (*where, "intent")
                if isinstance(ref, str):
                    if ref not in intents:
                        raise err(f"no intent named {ref!r}", at,
                                  fix=f"define it under intents: or use one of "
                                  f"{', '.join(sorted(intents)) or '(none defined)'}")
                    chosen.append(intents[ref])
                else:
                    chosen.append(self._intent(at, ref))
            return Create(key=value["key"], intent=chosen[0], others=tuple(chosen[1:]))
        if kind == "read":
            return Read(job=job_ref(value, (*loc, "read")))
        if kind == "attempts":
            return ListAttempts(job=job_ref(value, (*loc, "attempts")))
        if kind == "races":
            return ListRaces(job=job_ref(value, (*loc, "races")))
        if kind == "attempt":
            where = (*loc, "attempt")
            provider = value["provider"]
            if provider not in providers:
                raise err(f"no provider named {provider!r}", (*where, "provider"),
                          fix=f"define it under providers: or use one of "
                          f"{', '.join(sorted(providers)) or '(none defined)'}")
            name = value["name"]
            if name in attempts or name in jobs:
                raise err(f"the name {name!r} is already used", (*where, "name"),
                          fix="give every job and attempt its own name")
            job = job_ref(value["job"], (*where, "job"))
            attempts.add(name)
            timeout = value.get("timeout")
            return RunAttempt(job=job, provider=providers[provider], name=name,
                              timeout=float(timeout) if timeout is not None else None)
        if kind == "cancel":
            if isinstance(value, str):
                return Cancel(attempt=attempt_ref(value, (*loc, "cancel")))
            return Cancel(attempt=attempt_ref(value["attempt"], (*loc, "cancel", "attempt")),
                          reason=value.get("reason", "operator"))
        return Crash(attempt=attempt_ref(value, (*loc, "crash")))

    def _check_expect(self, loc: tuple[str | int, ...], kind: str, expect: dict[str, Any],
                      jobs: set[str]) -> None:
        where = (*loc, "expect")
        reuse = expect.get("reuse_of")
        if reuse is not None and kind != "create":
            raise self.src.error("expect.reuse_of belongs to a create step", (*where, "reuse_of"),
                                 fix="remove reuse_of here; on a create it names the job whose "
                                 "key this create sends again")
        if reuse is not None and reuse not in jobs:
            raise self.src.error(f"no earlier step saved a job named {reuse!r}",
                                 (*where, "reuse_of"),
                                 fix=f"write reuse_of: <a saved job> (saved so far: "
                                 f"{', '.join(sorted(jobs)) or 'none'})")
        if kind != "attempt":
            for key in ("start", "succeeded", "timed_out"):
                if key in expect:
                    raise self.src.error(
                        f"expect.{key} belongs to an attempt step", (*where, key),
                        fix="write the fields of this step's reply, e.g. {created: true} or "
                        "{error: idempotency_key_reused}",
                    )
            return
        for key, value in expect.items():
            if key not in ATTEMPT_EXPECT_KEYS:
                close = difflib.get_close_matches(key, ATTEMPT_EXPECT_KEYS, n=1)
                hint = f"did you mean '{close[0]}'? " if close else ""
                raise self.src.error(
                    f"an attempt step has no reply called {key!r}", (*where, key),
                    fix=f"{hint}use one of: {', '.join(ATTEMPT_EXPECT_KEYS)}",
                )
            if value != "ok" and not isinstance(value, dict):
                raise self.src.error(
                    f"expect.{key} must be ok or a mapping", (*where, key),
                    fix=f"write {key}: ok  or  {key}: {{error: attempt_in_flight}}",
                )
