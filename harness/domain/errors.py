"""The one error hierarchy of failover-harness.

Every error the harness raises on purpose derives from :class:`HarnessError`. Each class
carries a machine ``code`` (the API's problem ``code``), the HTTP status the reference service
answers with, and an ``exit_code`` for the CLI. The docstring of a class is its default message.
The tree is complete (``tests/domain/test_errors.py`` walks the package and compares): a class
defined elsewhere says so after its name.

::

    HarnessError
    ├── InputError                      bad input or configuration          (400 / exit 2)
    │   ├── IdempotencyKeyMissing       no Idempotency-Key                   400
    │   ├── IdempotencyKeyInvalid       key not 1–255 printable ASCII        400
    │   ├── InvalidIntent               body not an object, NaN/Infinity     422
    │   ├── InvalidJson                 (service.payload) body not JSON      400
    │   ├── ConfigError                 a file, line or field is wrong       exit 2
    │   │   ├── TokenizerUnavailable    (contracts.tokenizers) not offline   exit 2
    │   │   └── CounterError            (scenarios.targets.side_effects)     exit 2
    │   ├── UnsupportedTarget           a store/target URL we cannot open    exit 2
    │   ├── ShardError                  (domain.shard) bad --shard / CI index exit 2
    │   └── MissingExtra                an extra is not installed (also an ImportError)
    ├── NotFound                        absent, or another owner's           404
    ├── ConflictError                   the rules refuse the change          409
    │   ├── IdempotencyKeyReused        same key, another fingerprint
    │   ├── AttemptInFlight             an open attempt blocks a new one
    │   ├── JobCompleted                the job succeeded or was cancelled
    │   └── InvalidTransition           the attempt state machine forbids it
    ├── StoreError                      the database failed (never a verdict) 503
    ├── Unauthenticated                 (service.auth) no or unknown token   401
    ├── PayloadTooLarge                 (service.payload) body over 1 MiB    413
    ├── HttpProblem                     (service.asgi) no route, method, 500 404/405
    ├── TransportFailure                (service.client) no answer came back
    ├── ProviderCallError               (providers.classify) no reply: failed | unknown
    ├── Divergence                      (scenarios.scheduler) replay left its schedule
    └── ExploreStuck                    (explore.controller) nothing may run

Outside the hierarchy, deliberately (the same test holds this list complete):

    RaceFound           explore.property      an AssertionError: Hypothesis and pytest
                                              report it as the failing test it is
    ScenarioViolated    pytest_plugin         a failed pytest item, reported by pytest
    ExploreAborted      explore.hold          a BaseException that unwinds a worker's
                                              operation: no ``except Exception`` may take it
    CassetteMismatch    contracts.cassettes   an httpx.TransportError raised inside a
                                              transport: the client classifies it as any
                                              transport failure, and it becomes evidence
    BehaviourError      providers.behaviours  a ValueError, so pydantic reports it as an
                                              invalid field of providers.yaml
    ValueFix            validation            a ValueError, so pydantic reports it as an
                                              invalid field of any config file (its fix kept)
    Terminated          cli                   a KeyboardInterrupt: SIGTERM unwinds exactly
                                              like Ctrl-C (cancel, wait, close; exit 143)
    BusinessRejection   contracts.model       a contract's business rule refusing an
                                              output: a verdict, not a failure
    WireError           providers.fake_wire   a fake provider's refusal, answered as that
                                              provider's own HTTP error body
    NotPostgres         explore.pg_wire       a wire parser's signal that the peer speaks
    NotRedis            explore.redis_wire    another protocol; the explore proxy catches it
                                              and reports what it saw
    BoundExceeded       target.bounded        an httpx.TransportError raised inside the
    AnswerTooLarge      target.bounded        transport to a target (a body over the limit,
    DeadlineExceeded    target.bounded        no whole answer in time, a signal): the client
    Interrupted         target.bounded        records it as the target's failure, by name
    UnusableId          target.ids            a ValueError: an id from the service that cannot
                                              be a URL segment makes that intent unknown
    MissingField        target.bodies         a ValueError of a body template, turned into the
                                              profile's error at its line (or not applicable)
    CounterUnsettled    scenarios.targets     a signal of the side-effect reader: the run's
                                              side-effect promise is unknown, with the reason
"""

from __future__ import annotations

from typing import Any, ClassVar


class HarnessError(Exception):
    """The harness failed."""

    code: ClassVar[str] = "harness_error"
    http_status: ClassVar[int] = 500
    exit_code: ClassVar[int] = 1

    def __init__(self, message: str | None = None, **extra: Any) -> None:
        self.message = message or (self.__doc__ or self.code).strip().splitlines()[0]
        self.extra = extra
        super().__init__(self.message)

    def to_problem(self) -> dict[str, Any]:
        """The error as RFC 9457 problem details (without ``instance``)."""
        title = (type(self).__doc__ or self.code).strip().splitlines()[0]
        return {
            "type": f"https://failover-harness.dev/problems/{self.code}",
            "title": title,
            "status": self.http_status,
            "detail": self.message,
            "code": self.code,
            **self.extra,
        }


class InputError(HarnessError):
    """The input is not valid."""

    code = "invalid_request"
    http_status = 400
    exit_code = 2


class IdempotencyKeyMissing(InputError):
    """The Idempotency-Key header is required."""

    code = "idempotency_key_missing"


class IdempotencyKeyInvalid(InputError):
    """The Idempotency-Key must be 1–255 printable ASCII characters without spaces."""

    code = "idempotency_key_invalid"


class InvalidIntent(InputError):
    """The job's intent is not valid."""

    code = "invalid_request"
    http_status = 422


class ConfigError(InputError):
    """A configuration file is not valid."""

    code = "invalid_configuration"

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
        fix: str | None = None,
    ) -> None:
        where = file or ""
        if line is not None:
            where += f":{line}"
        if field:
            where += f" ({field})" if where else field
        text = f"{where}: {message}" if where else message
        if fix:
            text += f"\n  fix: {fix}"
        super().__init__(text)
        self.file, self.line, self.field, self.fix = file, line, field, fix


class UnsupportedTarget(InputError):
    """The store or target URL is not supported."""

    code = "unsupported_target"


class MissingExtra(InputError, ImportError):
    """An optional part of failover-harness is not installed."""

    code = "missing_extra"

    def __init__(self, extra: str, *, module: str, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs the '{extra}' extra ({module} is not installed): "
            f"pip install 'failover-harness[{extra}]'"
        )
        self.extra_name, self.name = extra, module


class NotFound(HarnessError):
    """The resource does not exist."""

    code = "not_found"
    http_status = 404


class ConflictError(HarnessError):
    """The change conflicts with the rules."""

    code = "conflict"
    http_status = 409


class IdempotencyKeyReused(ConflictError):
    """The Idempotency-Key was already used with a different request."""

    code = "idempotency_key_reused"


class AttemptInFlight(ConflictError):
    """An open attempt blocks a new one."""

    code = "attempt_in_flight"

    def __init__(self, message: str | None = None, *, blocking_attempt_id: str) -> None:
        super().__init__(
            message or f"attempt {blocking_attempt_id} is still open; resolve or cancel it first",
            blocking_attempt_id=blocking_attempt_id,
        )
        self.blocking_attempt_id = blocking_attempt_id


class JobCompleted(ConflictError):
    """The job has already succeeded or was cancelled."""

    code = "job_completed"


class InvalidTransition(ConflictError):
    """The attempt state machine forbids this event."""

    code = "invalid_transition"

    def __init__(self, *, from_state: str, to_state: str, event: str) -> None:
        super().__init__(
            f"event {event!r} would move the attempt from {from_state!r} to {to_state!r}, "
            "which the state machine forbids",
            from_state=from_state,
            to_state=to_state,
        )
        self.from_state, self.to_state, self.event = from_state, to_state, event


class StoreError(HarnessError):
    """The store's database failed."""

    code = "store_unavailable"
    http_status = 503
