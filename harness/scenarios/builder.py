"""A valid scenario file's data into a :class:`Scenario`: the cross-references (saved jobs,
named attempts, intents, providers, actors) checked in order, each mistake a
:class:`ConfigError` naming the line, the field and the fix."""

from __future__ import annotations

import difflib
import json
from typing import Any

from harness.domain import HarnessError, Intent
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
from harness.scenarios.schema import ACTION_KEYS
from harness.yamlsrc import YamlSource

ATTEMPT_EXPECT_KEYS = ("start", "dispatched", "timed_out", "succeeded", "failed")
DEFAULT_ACTOR = "alice"


class Builder:
    """One scenario file's (schema-valid) data; :meth:`build` the :class:`Scenario`."""

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
        if kind == "fault":
            return Fault(kind=str(value))  # a profile names its faults: checked at run time
        if kind == "create":
            return self._create((*loc, "create"), value, intents)
        if kind == "read":
            return Read(job=self._job_ref(value, (*loc, "read"), jobs))
        if kind == "attempts":
            return ListAttempts(job=self._job_ref(value, (*loc, "attempts"), jobs))
        if kind == "races":
            return ListRaces(job=self._job_ref(value, (*loc, "races"), jobs))
        if kind == "attempt":
            return self._attempt((*loc, "attempt"), value, providers, jobs, attempts)
        if kind == "cancel":
            if isinstance(value, str):
                return Cancel(attempt=self._attempt_ref(value, (*loc, "cancel"), attempts))
            return Cancel(attempt=self._attempt_ref(value["attempt"],
                                                    (*loc, "cancel", "attempt"), attempts),
                          reason=value.get("reason", "operator"))
        return Crash(attempt=self._attempt_ref(value, (*loc, "crash"), attempts))

    def _job_ref(self, name: str, where: tuple[str | int, ...], jobs: set[str]) -> str:
        return self._ref(name, where, jobs, f"no earlier step saved a job named {name!r}",
                         f"add save: {name} to the create step before this one",
                         "jobs saved so far")

    def _attempt_ref(self, name: str, where: tuple[str | int, ...], attempts: set[str]) -> str:
        return self._ref(name, where, attempts, f"no earlier attempt step is named {name!r}",
                         f"name an earlier attempt step {name!r}", "attempts so far")

    def _ref(self, name: str, where: tuple[str | int, ...], names: set[str], problem: str,
             fix: str, so_far: str) -> str:
        """``name`` when an earlier step made it, else an error that offers a close match."""
        if name not in names:
            known = ", ".join(sorted(names)) or "none yet"
            close = difflib.get_close_matches(name, sorted(names), n=1)
            hint = f"did you mean '{close[0]}'? otherwise " if close else ""
            raise self.src.error(problem, where, fix=f"{hint}{fix} ({so_far}: {known})")
        return name

    def _create(self, where: tuple[str | int, ...], value: Any,
                intents: dict[str, IntentSpec]) -> Create:
        err = self.src.error
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

    def _attempt(self, where: tuple[str | int, ...], value: Any,
                 providers: dict[str, ProviderScript], jobs: set[str],
                 attempts: set[str]) -> RunAttempt:
        err = self.src.error
        provider = value["provider"]
        if provider not in providers:
            raise err(f"no provider named {provider!r}", (*where, "provider"),
                      fix=f"define it under providers: or use one of "
                      f"{', '.join(sorted(providers)) or '(none defined)'}")
        name = value["name"]
        if name in attempts or name in jobs:
            raise err(f"the name {name!r} is already used", (*where, "name"),
                      fix="give every job and attempt its own name")
        job = self._job_ref(value["job"], (*where, "job"), jobs)
        attempts.add(name)
        timeout = value.get("timeout")
        return RunAttempt(job=job, provider=providers[provider], name=name,
                          timeout=float(timeout) if timeout is not None else None)

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
