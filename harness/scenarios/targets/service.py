"""Target profiles: drive a service whose API differs from API.md, described in YAML.

A profile says, per operation, the method and path, where the idempotency key goes, and where
the fields the checkers need are in the response (dotted paths); which status means "this key
was used with another body" (409 in API.md, 422 in the IETF idempotency-key draft); whether a
concurrent duplicate may be answered "in flight" (the engine then retries, and the checkers still
require one job id in the end); and which capabilities exist. Answers are translated into
API.md's shapes, so the engine and the checkers are unchanged. Example: docs/scenarios.md.

Busy answers (the declared in-flight answer, and 423/429 "locked") are retried with a bounded
backoff — for at most twice the profile's lease when it declares one — and the reply says how
many there were and how long the key stayed busy, so the checkers can classify a loser's answer
and report a key held past its lease. A create's reply also says whether the service marked it a
replay (its replay header). The model and loader are in :mod:`profile_model`; counters and
faults in :mod:`side_effects` and :mod:`faults`.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from harness.domain.clock import ManualClock
from harness.providers.recording import RecordingFake
from harness.scenarios.model import Fault, IntentSpec, Scenario
from harness.scenarios.targets import faults
from harness.scenarios.targets.answers import matches, translated
from harness.scenarios.targets.base import Reply, Target, TargetSession, redact
from harness.scenarios.targets.bodies import probe_intents, sent_intent, template_problem
from harness.scenarios.targets.http import owner_tokens, split_urls
from harness.scenarios.targets.preflight import (
    check_creates,
    check_named_owner,
    check_owners,
    everything_404,
    wrong_base_url,
)
from harness.scenarios.targets.provider_calls import ProviderCalls
from harness.scenarios.targets.side_effects import Counter as SideEffectCounter
from harness.scenarios.targets.side_effects import SqlSideEffects, open_counter
from harness.scenarios.targets.transport import ResendingTransport, resending_transport
from harness.target.bounded import json_body
from harness.target.ids import UnusableId, fill_path
from harness.target.model import (
    Answer,
    Auth,
    FaultTrigger,
    InFlight,
    Locked,
    Operation,
    OperationName,
    Profile,
    load_profile,
    profile_warnings,
)
from harness.target.owners import present
from harness.target.values import fill, pick, transport_detail

__all__ = ["Answer", "Auth", "FaultTrigger", "InFlight", "Locked", "Operation", "Profile",
           "ProfileSession", "ProfileTarget", "load_profile", "pick"]
BACKOFF_CAP_S = 0.5
PROBE_OWNER = "alice"  # the owner the preflight reads and creates as, when owners are names

class ProfileSession(TargetSession):
    """API.md operations translated through a profile, over httpx."""

    #: how a busy answer's backoff is waited, and the clock that says how long a key stayed busy
    #: (explore replaces both: its controller decides when a retry goes, in virtual time)
    pause: Callable[[float], None] = staticmethod(time.sleep)
    elapsed: Callable[[], float] = staticmethod(time.perf_counter)

    def __init__(self, target: ProfileTarget) -> None:
        self.target = target
        self.profile = target.profile
        transport = target.transport
        if transport is None:  # re-send what a closed kept-alive connection swallowed
            key = self.profile.operations["create_job"].key_header
            transport = resending_transport(target.urls[0], key_headers=(key,) if key else (),
                                            bounds=self.profile.limits,
                                            deadline_s=target.timeout_s)
        self.resending = transport if isinstance(transport, ResendingTransport) else None
        self.http = httpx.Client(transport=transport, timeout=target.timeout_s,
                                 headers=dict(self.profile.headers))
        self.turn = itertools.count()
        self.lock = threading.Lock()
        effects = self.profile.side_effects
        self.counter: SideEffectCounter | None = None
        if effects is not None:
            self.counter = target.sql_counter or open_counter(
                effects.http, effects.sql, http=self.http, base_url=target.urls[0])
        elif target.provider_calls is not None:  # calls to the primaries: the drill's fakes
            self.counter = target.provider_calls
            target.provider_calls.read_status = self._raw_status

    def close(self) -> None:
        self.http.close()

    def _send(self, owner: str, op_name: OperationName, values: dict[str, Any],
              content: bytes | None = None, key: str | None = None) -> httpx.Response | Reply:
        op = self.profile.operations[op_name]
        with self.lock:
            base = self.target.urls[next(self.turn) % len(self.target.urls)]
        shown = present(self.profile.owner_form, owner, self.target.tokens.get(owner))
        headers = dict(shown.headers)
        if key is not None and op.key_header:
            headers[op.key_header] = key
        try:  # an id the service answered is one path segment, or refused by name
            url = base + fill_path(op.path, {k: v for k, v in values.items()
                                             if isinstance(v, str)})
        except UnusableId as exc:
            return Reply(0, None, detail=str(exc), never_sent=True)
        if content is None and op.body is not None:
            content = json.dumps(fill(op.body, values)).encode()
        if content is not None:
            headers["Content-Type"] = "application/json"
        try:
            response = self.http.request(op.method, url, content=content, headers=headers,
                                         params=shown.params or None)
        except httpx.TransportError as exc:
            self._note()
            never = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
            return Reply(0, None, detail=transport_detail(exc, base, never), never_sent=never)
        note = self._note()
        if note:
            response.extensions = {**response.extensions, "harness_resent": note}
        return response

    def _raw_status(self, owner: str, job_id: str) -> str | None:
        """The job's status as the service words it (the drill's ``observe.status_field``)."""
        drill = self.profile.drill
        response = self._send(owner, "get_job", {"job_id": job_id})
        if isinstance(response, Reply) or drill is None or drill.observe is None:
            return None
        try:
            value = pick(json_body(response), drill.observe.status_field)
        except ValueError:
            return None
        return None if value is None else str(value)

    def _note(self) -> str:
        """Why this thread's last request was sent again on a new connection ('' if not)."""
        return self.resending.take_note() if self.resending is not None else ""

    def _translate(self, op_name: OperationName, response: httpx.Response | Reply) -> Reply:
        if isinstance(response, Reply):
            return response
        reply = translated(self.profile, op_name, response)
        resent = response.extensions.get("harness_resent")
        return replace(reply, resent=resent) if resent else reply

    def create_job(self, owner: str, key: str, body_text: str) -> Reply:
        content = body_text.encode("utf-8")
        started = self.elapsed()
        busy: Counter[str] = Counter()
        last_busy = 0.0
        # how long the key was surely held in progress: from the first busy answer (it was held
        # by then) to the sending of the last request answered busy (it was still held after);
        # answer times alone would count a loaded service's slow answers as held time
        first_busy: float | None = None
        held = 0.0
        while True:
            sent = self.elapsed() - started
            response = self._send(owner, "create_job", {}, content=content, key=key)
            kind, retry_after = self._busy(response)
            if kind is None:
                break
            busy[kind] += 1
            last_busy = self.elapsed() - started
            first_busy = last_busy if first_busy is None else first_busy
            held = max(held, sent - first_busy)
            wait = self._backoff(busy[kind] - 1, retry_after)
            if busy[kind] > self._max_retries(kind) or not self._within_wait(
                    kind, last_busy + wait):
                break
            # The first request is still running (or the key is locked): wait, ask again.
            self.pause(wait)
        reply = self._translate("create_job", response)
        if kind is not None:  # still busy when the engine stopped asking
            code = "still_in_progress" if kind == "in_flight" else "still_locked"
            reply = replace(reply, body={"code": code, "status": reply.status})
        calls = self.target.provider_calls
        if calls is not None and reply.ok and isinstance(reply.body, dict) and \
                reply.body.get("id") is not None:
            calls.made(owner, str(reply.body["id"]))
        if not busy:
            return reply
        return replace(reply, busy=tuple(sorted(busy.items())), busy_ms=round(held * 1000, 1))

    def _busy(self, response: httpx.Response | Reply) -> tuple[str | None, float]:
        """``in_flight`` (the profile's declared answer), ``locked`` (423/429…) or None; and the
        Retry-After seconds, if the service sent them."""
        if isinstance(response, Reply):
            return None, 0.0
        try:
            retry_after = float(response.headers.get("retry-after", "0"))
        except ValueError:
            retry_after = 0.0
        in_flight = self.profile.in_flight
        if in_flight is not None and response.status_code == in_flight.status:
            try:
                body = json_body(response) if response.content else None
            except ValueError:
                body = None
            if matches(in_flight, response, body):
                return "in_flight", retry_after
        if response.status_code in self.profile.locked.statuses:
            return "locked", retry_after
        return None, 0.0

    def _busy_rule(self, kind: str) -> InFlight | Locked:
        in_flight = self.profile.in_flight
        return in_flight if kind == "in_flight" and in_flight is not None else self.profile.locked

    def _max_retries(self, kind: str) -> int:
        return self._busy_rule(kind).max_retries

    def _backoff(self, n: int, retry_after: float) -> float:
        lease = self.profile.lease
        cap = BACKOFF_CAP_S if lease is None else min(BACKOFF_CAP_S, lease / 4)
        return max(min(cap, 0.005 * 2 ** min(n, 7)), min(retry_after, cap))

    def _within_wait(self, kind: str, elapsed_s: float) -> bool:
        """Busy answers are retried for at most twice the declared lease; with no lease (or
        ``lease_s: none``: a stuck key never frees), for the busy rule's ``max_wait_s``."""
        lease = self.profile.lease
        return elapsed_s <= (2 * lease if lease is not None else self._busy_rule(kind).max_wait_s)

    def count_side_effects(self) -> int:
        """The service's side effects so far, read from the profile's counter."""
        if self.counter is None:
            raise RuntimeError("the profile declares no side_effects counter")
        return self.counter.count()

    def inject_fault(self, kind: str) -> Reply:
        """Arm the profile's fault ``kind`` (``handler_error``: its default one): the next
        request fails."""
        fault = self.profile.fault(kind)
        if fault is None:
            raise RuntimeError(f"the profile declares no {kind} fault")
        return faults.inject(fault, self.http, self.target.urls[0])

    def get_job(self, owner: str, job_id: str) -> Reply:
        return self._translate("get_job", self._send(owner, "get_job", {"job_id": job_id}))

    def start_attempt(self, owner: str, job_id: str, provider: str) -> Reply:
        return self._translate("start_attempt", self._send(
            owner, "start_attempt", {"job_id": job_id, "provider": provider}))

    def post_event(self, owner: str, attempt_id: str, event: dict[str, Any]) -> Reply:
        values = {"attempt_id": attempt_id, "event": event, "type": event["type"]}
        op = self.profile.operations["post_event"]
        content = None if op.body is not None else json.dumps(event).encode()
        return self._translate("post_event",
                               self._send(owner, "post_event", values, content=content))

    def list_attempts(self, owner: str, job_id: str) -> Reply:
        return self._translate("list_attempts",
                               self._send(owner, "list_attempts", {"job_id": job_id}))

    def list_races(self, owner: str, job_id: str) -> Reply:
        return self._translate("list_races", self._send(owner, "list_races", {"job_id": job_id}))


class ProfileTarget(Target):
    """A service described by a target profile, at one or more base URLs."""

    kind = "http"
    virtual_clock = False

    def __init__(
        self,
        urls: str,
        profile: str | Path,
        *,
        tokens_file: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self.urls = split_urls(urls)
        self.profile = load_profile(profile)
        env = os.environ if env is None else env
        self.tokens = owner_tokens(tokens_file, env) if (tokens_file or env.get(
            "HARNESS_TOKENS")) else {}
        self.transport = transport
        self.timeout_s = timeout_s
        extra = {"side_effects"} if self.profile.side_effects is not None else set()
        if self.profile.faults:
            extra.add("handler_faults")
        if len(self.urls) > 1:  # one URL is one process, unless the profile says otherwise
            extra.add("replicas")
        self.capabilities = frozenset({*self.profile.capabilities, "owners", *extra})
        self.fingerprint_mode = self.profile.fingerprint
        self.warnings = profile_warnings(self.profile)
        self.race_digest = self.profile.race_digest
        sql = self.profile.side_effects.sql if self.profile.side_effects else None
        self.sql_counter = SqlSideEffects(sql, env) if sql is not None else None
        self.provider_calls: ProviderCalls | None = None

    def count_provider_calls(self, primaries: Sequence[RecordingFake],
                             fakes: Sequence[RecordingFake]) -> bool:
        """Count side effects as calls to ``primaries`` (the drill's fakes of the primary
        providers; ``fakes``: all of them), when the profile names no counter of its own and has
        a ``drill:`` section; True if so."""
        if self.profile.side_effects is not None or self.profile.drill is None:
            return False
        self.provider_calls = ProviderCalls(primaries, fakes, self.profile.drill)
        self.capabilities = self.capabilities | {"side_effects"}
        return True

    def promises(self) -> dict[str, Any]:
        """What the profile promises about errors and held keys (written into fault ops)."""
        promised: dict[str, Any] = {"policy": self.profile.on_handler_error}
        lease = self.profile.lease_s
        if lease is not None:  # "none": the service never expires a key
            promised["lease_ms"] = "none" if lease == "none" else round(lease * 1000)
        return promised

    def unmapped(self, op: str) -> frozenset[str]:
        """The history fields of an ``op`` answer the profile promises nothing about (not
        mapped, or moved by the service's own worker: :meth:`Profile.unmapped`)."""
        name: OperationName = {"create": "create_job", "read": "get_job",
                               "start": "start_attempt"}.get(op, "post_event")  # type: ignore[assignment]
        return self.profile.unmapped(name)

    def terms(self) -> dict[str, str]:
        """The profile's own answers, as promises and messages name them."""
        profile = self.profile
        conflict = profile.conflict_answer
        terms = {"locked": "/".join(str(s) for s in profile.locked.statuses) or "locked"}
        if conflict is None:
            terms["conflict"] = "a refusal (400/409/412/422: the profile declares no specific " \
                                "key-reuse answer)"
        else:
            terms["conflict"] = f"{conflict.status}" + (f" {conflict.code}" if conflict.code
                                                        else " (key reused)")
        mark, shape = profile.replay_mark, profile.replay_shape
        if profile.replays_unmarked:
            terms["replay_mark"] = "no mark: the profile declares replays unmarked"
            terms["replay"] = "unmarked"
        elif shape is not None:
            terms["replay_mark"] = f"status {shape.status} carrying the original job" + (
                f", {mark.name}: {mark.value}" if mark is not None else "")
        elif mark is not None:
            terms["replay_mark"] = f"{mark.name}: {mark.value}"
        if profile.in_flight is not None:
            terms["in_flight"] = f"the declared in-progress answer ({profile.in_flight.status})"
        return terms

    @property
    def description(self) -> str:
        return ",".join(redact(u) for u in self.urls)

    def not_applicable(self, scenario: Scenario) -> str | None:
        missing = sorted(scenario.requires - self.capabilities)
        if missing:
            why = {"replicas": "replicas (give two URLs or more, or declare replicas under "
                               "capabilities: for a load balancer)"}
            return (f"needs {', '.join(why.get(m, m) for m in missing)}, which profile "
                    f"{self.profile.name!r} does not declare")
        if self.profile.owner_form.needs_tokens and not self.tokens and \
                len({s.actor for s in scenario.steps}) > 1:  # one caller
            return ("needs two owners: give --tokens-file with a token per owner ({token: "
                    "owner}) to judge owner scoping, or present owners by name (owners: "
                    "{header: X-Owner, value: \"{owner}\"})")
        template = self.profile.operations["create_job"].body
        problem = template_problem(template, scenario) if template is not None else None
        if problem is not None:
            return problem
        for step in scenario.steps:
            if isinstance(step.action, Fault) and \
                    self.profile.fault(step.action.kind) is None:
                return (f"needs the fault {step.action.kind!r}, which profile "
                        f"{self.profile.name!r} does not declare under faults: (it declares "
                        f"{', '.join(self.profile.faults or {}) or 'none'})")
        return None

    def as_sent(self, intent: IntentSpec) -> IntentSpec:
        """The intent as the service's own body, when the profile has a create body template."""
        template = self.profile.operations["create_job"].body
        return intent if template is None else sent_intent(template, intent)

    def preflight(self) -> None:
        """The service answers, accepts every owner (a read of a missing job), and does not
        refuse every create (two creates, fresh keys)."""

        session = ProfileSession(self)
        form = self.profile.owner_form
        try:
            create = self.profile.operations["create_job"].path
            if "{" not in create and everything_404(session.http, self.urls[0], (create,)):
                raise wrong_base_url(self.description, f"GET {create} answered 404")
            if form.needs_tokens:
                check_owners(session, list(self.tokens) or [""], self.description,
                             tokens_given=bool(self.tokens))
                owner = next(iter(self.tokens), "")
            else:
                owner = PROBE_OWNER
                check_named_owner(session, owner, self.description, form.place)
            check_creates(session, owner, [self.as_sent(i).text for i in probe_intents()],
                          self.description)
        finally:
            session.close()

    def unready(self, scenario: Scenario) -> tuple[str, str] | None:
        actors = {s.actor for s in scenario.steps}
        tokens = self.profile.owner_form.needs_tokens
        absent = sorted(actors - set(self.tokens)) if self.tokens and tokens else []
        if absent:
            return (f"no token for {'owner' if len(absent) == 1 else 'owners'} "
                    f"{', '.join(absent)} in the tokens file",
                    f"add a token for {', '.join(absent)} to --tokens-file")
        return None

    @contextmanager
    def session(
        self, clock: ManualClock, run_id: str, concurrency: int
    ) -> Iterator[TargetSession]:
        session = ProfileSession(self)
        try:
            yield session
        finally:
            session.close()
