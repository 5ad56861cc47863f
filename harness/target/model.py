"""The target profile file: its model (pydantic, strict) and its loader (errors name the line).

A profile maps API.md's operations onto another service's API and states that service's
idempotency promises: which header marks a replay (or what shape a replay has: ``replay:``),
whether intents are compared as canonical JSON or as bytes, how another body under a used key is
answered (``conflict:``, or ``none``), how long a key may be held "in progress" (the lease), what
a retry after a handler failure gets (``retry``: it runs again; ``final``: the same failure), how
lost payloads are digested (``race_digest:``), how to count the service's side effects (an HTTP
endpoint or a SQL query) and the ways to make its handler fail (named ``faults:``, one of them the
default). The full format, with an example, is in docs/scenarios.md ("Target profiles").
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from harness.domain.states import AttemptState, JobStatus
from harness.target.bodies import check_template
from harness.target.drill_section import DrillSection
from harness.target.errors import ProfileValueError, explain
from harness.target.limits import Limits
from harness.target.owners import Owners
from harness.yamlsrc import YamlSource, load_yaml

OperationName = Literal["create_job", "get_job", "start_attempt", "post_event",
                        "list_attempts", "list_races"]
NEEDS: dict[str, tuple[OperationName, ...]] = {"jobs": ("create_job", "get_job"),
         "attempts": ("start_attempt", "post_event", "list_attempts", "list_races")}


#: the words a profile's ``values:`` maps a service's own values to, per API.md field
VALUE_WORDS: dict[str, tuple[str, ...]] = {"status": tuple(s.value for s in JobStatus),
                                           "state": tuple(s.value for s in AttemptState)}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Operation(_Strict):
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "GET"
    path: str = Field(min_length=1, pattern=r"^/")
    key_header: str | None = None
    body: Any = None
    #: ours (API.md's field name) → the dotted path in their answer; none: API.md's names
    fields: dict[str, str] = {}
    #: a list operation: the dotted path of the list; ``.`` (or none) for a top-level array
    items: str | None = None
    values: dict[str, dict[str, str]] = {}

    @field_validator("values")
    @classmethod
    def _values(cls, value: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        """A service's value mapped to a word API.md does not have (``sucess``) is refused
        here, naming the field, the value and the words, not met later as a status no
        scenario expects."""
        for name, table in value.items():
            words = VALUE_WORDS.get(name)
            for theirs, ours in table.items():
                if words is not None and ours not in words:
                    near = difflib.get_close_matches(ours, words, n=1, cutoff=0.5)
                    hint = f" (did you mean {near[0]!r}?)" if near else ""
                    raise ProfileValueError(
                        f"maps {name} {theirs!r} to {ours!r}, which is not one of API.md's "
                        f"{name} words{hint}", f"values.{name}.{theirs} must be one of: "
                        f"{', '.join(words)} (their value on the left, API.md's on the right)")
        return value

    @field_validator("items")
    @classmethod
    def _items(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ProfileValueError("names nothing", "write items: . for a top-level JSON array, "
                                    "or the dotted path of the list (items: data.items)")
        return value

    @property
    def top_level_list(self) -> bool:
        """The list is the answer itself (``items: .`` or no ``items``)."""
        return self.items in (None, ".")


class Answer(_Strict):
    status: int = Field(ge=100, le=599)
    code_field: str | None = None
    code: str | None = None


#: how long busy answers are retried when the profile declares no lease (or ``lease_s: none``)
MAX_WAIT_S = 10.0


class InFlight(Answer):
    max_retries: int = Field(default=50, ge=1, le=1000)
    #: the longest the engine keeps asking (seconds), whatever the count
    max_wait_s: float = Field(default=MAX_WAIT_S, gt=0, le=3600)


class Locked(_Strict):
    """Answers meaning "locked, ask again later"; the engine retries them like in-flight ones."""

    statuses: list[int] = Field(default=[423, 429])
    max_retries: int = Field(default=50, ge=1, le=1000)
    max_wait_s: float = Field(default=MAX_WAIT_S, gt=0, le=3600)


class Auth(_Strict):
    header: str = "Authorization"
    value: str = "Bearer {token}"


class ReplayHeader(_Strict):
    """The response header by which the service says "this is a replay"."""

    name: str = Field(default="Idempotent-Replayed", min_length=1)
    value: str = "true"


class HttpCounter(_Strict):
    """An endpoint answering the number of side effects so far (``field``: where the number is;
    absent: the body is the number); ``{fresh_key}`` in a header is a new key per request."""

    method: Literal["GET", "POST"] = "GET"
    path: str = Field(min_length=1, pattern=r"^/")
    field: str | None = None
    headers: dict[str, str] = {}


class SqlCounter(_Strict):
    """A query returning one number, against the service's database (``url``, or the name of an
    environment variable holding it: ``url_env``, so a password stays out of the file)."""

    url: str | None = None
    url_env: str | None = None
    query: str = Field(min_length=1)
    # where the profile names url_env (file, line): a missing variable is reported there
    _asked_at: tuple[str, int | None] | None = PrivateAttr(default=None)


class SideEffects(_Strict):
    http: HttpCounter | None = None
    sql: SqlCounter | None = None


class FaultTrigger(_Strict):
    """How to make the service's next request fail: an endpoint (with headers and a body, in
    which ``{fresh_key}`` is a new key per request), or a command (argv list, run without a
    shell; ``{target}`` is the base URL)."""

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    path: str | None = Field(default=None, pattern=r"^/")
    headers: dict[str, str] = {}
    body: Any = None
    command: list[str] | None = None


class ReplayShape(_Strict):
    """How the service answers a replay when it is not a 2xx with a replay header: e.g.
    ``{status: 409, body: original, header: none}`` — status 409 carrying the original job."""

    status: int = Field(ge=100, le=599)
    body: Literal["original"] = "original"
    header: Literal["none"] | ReplayHeader = "none"


#: API.md's operations: what a profile without ``operations:`` describes (a service speaking
#: API.md whose profile only adds observers: side_effects, faults, a lease)
API_MD_OPERATIONS: dict[str, dict[str, Any]] = {
    "create_job": {"method": "POST", "path": "/v1/jobs", "key_header": "Idempotency-Key"},
    "get_job": {"method": "GET", "path": "/v1/jobs/{job_id}"},
    "start_attempt": {"method": "POST", "path": "/v1/jobs/{job_id}/attempts",
                      "body": {"provider": "{provider}"}},
    "post_event": {"method": "POST", "path": "/v1/attempts/{attempt_id}/events"},
    "list_attempts": {"method": "GET", "path": "/v1/jobs/{job_id}/attempts"},
    "list_races": {"method": "GET", "path": "/v1/jobs/{job_id}/races"},
}
API_MD_CAPABILITIES = ["jobs", "attempts", "timeouts", "hedge"]
#: history field → the API.md field a profile operation's ``fields:`` must map for it
JOB_FIELDS = {"job": "id", "status": "status", "version": "version",
              "completed_by": "completed_by", "result_sha256": "result",
              "fingerprint": "fingerprint"}
ATTEMPT_FIELDS = {"attempt": "id", "job": "job_id", "state": "state",
                  "read_version": "read_version", "outcome": "outcome"}


class Profile(_Strict):
    name: str = Field(min_length=1)
    #: ``owners`` is accepted (every profile target has it: owners are tokens)
    capabilities: list[Literal["jobs", "attempts", "timeouts", "hedge", "owners",
                               "replicas"]] = ["jobs"]
    #: how an owner is presented (``owners:``; ``auth:`` is its older spelling, a header only)
    auth: Auth | None = None
    owners: Owners | None = None
    headers: dict[str, str] = {}
    created_status: int = 201
    conflict: Answer | Literal["none"] = Answer(status=409)
    in_flight: InFlight | None = None
    locked: Locked = Locked()
    replay_header: ReplayHeader = ReplayHeader()
    #: ``unmarked``: a replay looks like the creation (same status, no header, no body field)
    replay: ReplayShape | Literal["unmarked"] | None = None
    fingerprint: Literal["canonical", "json", "parsed-json", "bytes", "none"] = "canonical"
    race_digest: Literal["sha256-rfc8785", "none"] = "none"
    #: ``none``: the service never expires a held key (None: the profile does not say)
    lease_s: Annotated[float, Field(gt=0, le=7 * 86400)] | Literal["none"] | None = None
    on_handler_error: Literal["retry", "final"] = "retry"
    side_effects: SideEffects | None = None
    faults: dict[str, FaultTrigger] | None = None
    default_fault: str | None = None
    operations: dict[OperationName, Operation]
    drill: DrillSection | None = None  # the service seen from its providers (docs/drill.md)
    #: the service moves its jobs on by itself (None: implied by a drill that submits jobs)
    own_worker: bool | None = None
    #: the largest answer body and the deadline of one request (harness.target.bounded)
    limits: Limits = Limits()

    @model_validator(mode="before")
    @classmethod
    def _api_md_by_default(cls, data: Any) -> Any:
        """No ``operations:``: the service speaks API.md (and has its capabilities, unless the
        profile lists them)."""
        if isinstance(data, dict) and "operations" not in data:
            data = {**data, "operations": API_MD_OPERATIONS}
            data.setdefault("capabilities", API_MD_CAPABILITIES)
        return data

    @property
    def owner_form(self) -> Owners:
        """How an owner is presented: ``owners:``, else ``auth:`` (a header), else the default
        ``Authorization: Bearer {token}``."""
        if self.owners is not None:
            return self.owners
        auth = self.auth or Auth()
        return Owners(header=auth.header, value=auth.value)

    @property
    def conflict_answer(self) -> Answer | None:
        """The key-reused answer, or None (``conflict: none``: the service has none)."""
        return None if self.conflict == "none" else self.conflict

    @property
    def replay_mark(self) -> ReplayHeader | None:
        """The header marking a replay (None: the replay shape says there is none)."""
        if self.replay is None:
            return self.replay_header
        if self.replay == "unmarked":
            return None
        return None if self.replay.header == "none" else self.replay.header

    @property
    def replay_shape(self) -> ReplayShape | None:
        """The declared shape of a replay, unless it is the creation's own (unmarked)."""
        if self.replay is None or self.replay == "unmarked" or self.replays_unmarked:
            return None
        return self.replay

    @property
    def replays_unmarked(self) -> bool:
        """A replay cannot be told from a creation: ``replay: unmarked``, or a replay shape with
        the created status and no header (``{status: 201, header: none}``)."""
        if self.replay == "unmarked":
            return True
        return self.replay is not None and self.replay.header == "none" and \
            self.replay.status == self.created_status

    @property
    def works_own_jobs(self) -> bool:
        """The service's own worker moves a job on between the harness's steps: ``own_worker``,
        else implied by a ``drill:`` whose submit kind is ``create_job``."""
        if self.own_worker is not None:
            return self.own_worker
        return self.drill is not None and self.drill.submit.kind == "create_job"

    def unmapped(self, name: OperationName) -> frozenset[str]:
        """The history fields of operation ``name``'s answer that promise nothing here: those
        its ``fields:`` do not map, ``created`` with unmarked replays (a creation cannot be told
        from a replay), and a job's ``status`` and ``version`` with an own worker (they move
        between steps the harness did not drive)."""
        operation = self.operations.get(name)
        jobs = name in ("create_job", "get_job")
        ours = JOB_FIELDS if jobs else ATTEMPT_FIELDS
        unseen = {"created"} if name == "create_job" and self.replays_unmarked else set()
        unseen |= {"status", "version"} if jobs and self.works_own_jobs else set()
        if operation is not None and not operation.fields:
            return frozenset(unseen)  # no fields: the service answers API.md's
        mapped = set(operation.fields) if operation is not None else set()
        return frozenset({k for k, theirs in ours.items() if theirs not in mapped} | unseen)

    @property
    def lease(self) -> float | None:
        """The declared lease in seconds (None: none declared, or ``none``: never expires)."""
        return self.lease_s if isinstance(self.lease_s, float | int) else None

    def fault(self, name: str) -> FaultTrigger | None:
        """The fault a scenario step names: ``handler_error`` is the default one (the fault so
        named, else ``default_fault``, else the first listed)."""
        faults = self.faults or {}
        if name in faults:
            return faults[name]
        if name == "handler_error" and faults:
            return faults[self.default_fault or next(iter(faults))]
        return None


def load_profile(path: str | Path) -> Profile:
    """Read and validate a profile; errors name the file, the line and the fix."""
    src = load_yaml(Path(path))
    if not isinstance(src.data, dict):
        raise src.error("a target profile must be a YAML mapping",
                        fix="start with name:, capabilities: and operations:")
    try:
        profile = Profile.model_validate(src.data)
    except ValidationError as exc:
        message, loc, fix = explain(Profile, exc.errors())
        if loc[-1:] == ("lease_s",):
            fix += " (the seconds a key may be held in progress), or lease_s: none (the " \
                   "service never expires a held key)"
        raise src.error(message, loc, fix=fix) from None
    for capability in profile.capabilities:
        for op in NEEDS.get(capability, ()):
            if op not in profile.operations:
                raise src.error(f"capability {capability!r} needs operation {op!r}",
                                ("operations",), fix=f"describe operations.{op}, or drop "
                                f"{capability!r} from capabilities")
    required: tuple[OperationName, ...] = ("create_job", "get_job")
    for name in required:
        if name not in profile.operations:
            raise src.error(f"operation {name!r} is missing", ("operations",),
                            fix=f"add operations.{name}: {{method: …, path: …, fields: "
                            "{id: …}}")
    if not profile.operations["create_job"].key_header:
        raise src.error("create_job has no key_header", ("operations", "create_job"),
                        fix="add key_header: Idempotency-Key (the header carrying the key)")
    if profile.auth is not None and profile.owners is not None:
        raise src.error("auth: and owners: both say how an owner is presented", ("auth",),
                        fix="keep owners: (auth: {header: H, value: V} is owners: {header: H, "
                        "value: V})")
    body = profile.operations["create_job"].body
    if body is not None:
        wrong = check_template(body)
        if wrong is not None:
            raise src.error(f"the create body template: {wrong[0]}",
                            ("operations", "create_job", "body"), fix=wrong[1])
    _check_observers(src, profile)
    sql = profile.side_effects.sql if profile.side_effects is not None else None
    if sql is not None and sql.url_env:
        sql._asked_at = (str(src.path), src.line_of(("side_effects", "sql", "url_env")))
    return profile


def _check_observers(src: YamlSource, profile: Profile) -> None:
    """The either-or fields pydantic cannot phrase well: one counter, one way to fail."""
    effects = profile.side_effects
    if effects is not None and (effects.http is None) == (effects.sql is None):
        raise src.error("side_effects needs exactly one of http or sql", ("side_effects",),
                        fix="write side_effects: {http: {path: /stats, field: jobs}} or "
                        "side_effects: {sql: {url_env: JOBS_DB, query: SELECT count(*) FROM jobs}}")
    if effects is not None and effects.sql is not None:
        sql = effects.sql
        if (sql.url is None) == (sql.url_env is None):
            raise src.error("side_effects.sql needs exactly one of url or url_env",
                            ("side_effects", "sql"),
                            fix="write url: sqlite:///jobs.db, or url_env: NAME (an environment "
                            "variable holding the URL, for URLs with a password)")
        if sql.url is not None and not sql.url.startswith(
                ("sqlite:///", "postgresql://", "postgres://")):
            raise src.error(f"{sql.url.split(':', 1)[0]!r} databases are not supported",
                            ("side_effects", "sql", "url"),
                            fix="write sqlite:///path/file.db or postgresql://host/db")
    faults = profile.faults
    if faults is not None and not faults:
        raise src.error("faults: names no fault", ("faults",),
                        fix="write faults: {raise: {method: POST, path: /_faults/raise-next}} "
                        "(one entry per way to make the next request fail), or remove faults:")
    for name, fault in (faults or {}).items():
        where = ("faults", name)
        if (fault.path is None) == (fault.command is None):
            raise src.error(f"faults.{name} needs exactly one of path or command", where,
                            fix="write {method: POST, path: /_faults/fail-next} or "
                            "{command: [touch, /tmp/fail-next]}")
        if fault.command is not None and not fault.command:
            raise src.error("the fault command is empty", (*where, "command"),
                            fix="write the program and its arguments: [touch, /tmp/fail-next]")
        if fault.command is not None and (fault.headers or fault.body is not None):
            raise src.error(f"faults.{name} is a command: headers and body apply to an endpoint",
                            where, fix="remove headers:/body:, or use path: instead of command:")
    if profile.default_fault is not None and profile.default_fault not in (faults or {}):
        known = ", ".join(faults or {}) or "none declared"
        raise src.error(f"default_fault names {profile.default_fault!r}, which faults: does not "
                        "declare", ("default_fault",),
                        fix=f"write one of: {known}")


#: what a profile whose replays look like creations turns off (named in its load warning)
UNMARKED_OFF = ("scripted 'created:' expectations (and the 'created: false' of reuse_of:)",
                "one_job_per_intent's 'only the first create answers 201 created'",
                "identical_retry_replayed's 'says it is a replay'")


def profile_warnings(profile: Profile) -> list[str]:
    """What the profile's description makes unjudgeable, said once at load."""
    out = []
    if profile.replays_unmarked:
        how = ("replay: unmarked" if profile.replay == "unmarked" else
               f"replay: {{status: {profile.created_status}, header: none}} (the created "
               "status, no header: write replay: unmarked to say so)")
        out.append(f"profile {profile.name!r}: {how} — a replay cannot be told from a "
                   "creation, so 'created' is never an observation; turned off: "
                   + "; ".join(UNMARKED_OFF) + ". The same job is judged by job ids, the "
                   "side-effect counter and the job count")
    if profile.works_own_jobs:
        how = "own_worker: true" if profile.own_worker else "a drill that submits jobs"
        out.append(f"profile {profile.name!r}: {how} — the service works its jobs itself, so a "
                   "job's status and version move between the harness's steps; turned off: "
                   "scripted status: and version: expectations on creates and reads. One job "
                   "per intent, the job ids and the key-reused refusal are still judged (write "
                   "own_worker: false if the service only moves a job when asked)")
    if profile.fingerprint == "none":
        out.append(f"profile {profile.name!r}: fingerprint: none — the service never compares "
                   "bodies, so another body under a used key is answered with the first job: "
                   "that is judged as the violation it is (mismatch_rejected_unchanged)")
    return out
