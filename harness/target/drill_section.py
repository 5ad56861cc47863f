"""The target profile's ``drill:`` section: the user's service seen as a black box in front of
its providers (how to submit an intent, how to watch it, which providers it calls, its timeouts
and its declared failover policy). The full format, with an example, is in docs/drill.md.

Pure model and loader; ``${VAR}`` in header values, in ``port`` and in ``host`` is read from the
environment when a drill starts (:func:`interpolate`), so secrets stay out of the file and tests
can bind free ports. Errors name the file, the line and the fix like the rest of the profile.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.domain.errors import ConfigError
from harness.target.errors import ProfileValueError
from harness.yamlsrc import YamlSource

ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
TAG_MARK = "{tag}"  # where the drill puts the intent's tag (in the text that becomes the prompt)
KEY_MARK = "{key}"  # a fresh idempotency key per intent (the same one on a double click)
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    """``host`` is this machine's loopback: ``localhost``, or any address of 127.0.0.0/8 or
    ``::1`` (127.0.0.2 is as local as 127.0.0.1)."""
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


def _mentions(value: Any, mark: str) -> bool:
    if isinstance(value, str):
        return mark in value
    if isinstance(value, dict):
        return any(_mentions(v, mark) for v in value.values())
    if isinstance(value, list):
        return any(_mentions(v, mark) for v in value)
    return False


class Submit(_Strict):
    """How the drill submits one intent. ``kind: create_job``: a request that answers a job id
    (then watched with ``observe``); ``kind: chat``: a synchronous chat call (a gateway) whose
    answer is the result. ``{tag}`` in ``body`` is replaced by the intent's tag, ``{key}`` (in
    ``body`` or a header) by its idempotency key."""

    kind: Literal["create_job", "chat"] = "create_job"
    method: Literal["POST", "PUT"] = "POST"
    path: str = Field(min_length=1, pattern=r"^/")
    headers: dict[str, str] = {}
    body: Any
    stream: bool = False  # chat only: ask for server-sent events
    #: where the job id is in the create answer (create_job); the result text in a chat answer
    id_field: str = "id"
    result_field: str = "choices.0.message.content"

    @field_validator("body")
    @classmethod
    def _tagged(cls, value: Any) -> Any:
        if not _mentions(value, TAG_MARK):
            raise ProfileValueError(
                "has no {tag}: the drill could not tell which provider calls belong to which "
                "intent", "put {tag} in the text your service forwards to the provider, e.g. "
                "body: {prompt: \"summarise ticket {tag}\"}")
        return value


class StatusValues(_Strict):
    """Which of the service's status values mean what (the others: unknown to the drill)."""

    succeeded: list[str] = Field(min_length=1)
    failed: list[str] = []
    running: list[str] = []
    unknown: list[str] = []  # the service itself says it does not know yet (e.g. a timeout)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        """A misspelled class (``succeded``) is named as such, not as a missing ``succeeded``."""
        if isinstance(data, dict):
            names = list(cls.model_fields)
            for key in data:
                if key not in names:
                    near = difflib.get_close_matches(str(key), names, n=1, cutoff=0.6)
                    hint = f", did you mean {near[0]!r}?" if near else ""
                    raise ProfileValueError(
                        f"has an unknown key {key!r}{hint}",
                        f"the keys of drill.observe.statuses are: {', '.join(names)} "
                        "(see docs/drill.md, The profile)")
        return data


class Listing(_Strict):
    """A list the service shows per job (its attempts, or its races: late results recorded)."""

    method: Literal["GET", "POST"] = "GET"
    path: str = Field(min_length=1, pattern=r"^/")
    items: str = "."  # the dotted path of the list; ``.``: the answer is the list
    provider_field: str | None = None  # which provider the entry is about, if shown


class Observe(_Strict):
    """How to watch a job: ``{job_id}`` in ``path``; where its status and result are."""

    method: Literal["GET", "POST"] = "GET"
    path: str = Field(min_length=1, pattern=r"^/")
    headers: dict[str, str] = {}
    status_field: str = "status"
    result_field: str = "result"
    statuses: StatusValues
    attempts: Listing | None = None
    races: Listing | None = None
    poll_s: float = Field(default=0.05, gt=0, le=5)


class DrillProvider(_Strict):
    """A provider the service calls; the drill serves it on ``host:port`` (loopback only)."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$")
    wire: Literal["openai", "anthropic"]
    role: Literal["primary", "fallback"]
    host: str = "127.0.0.1"
    port: int | str

    @field_validator("port")
    @classmethod
    def _port(cls, value: int | str) -> int | str:
        if isinstance(value, int):
            if not 1 <= value <= 65535:
                raise ProfileValueError("is not a port", "write a port from 1 to 65535, or "
                                        "${PRIMARY_PORT} to read it from the environment")
            return value
        if not ENV_REF.fullmatch(value.strip()):
            raise ProfileValueError("is not a port", "write a number, or ${NAME} (an "
                                    "environment variable holding the port)")
        return value.strip()

    @property
    def kind(self) -> str:
        """The fake's wire kind (providers' vocabulary)."""
        return "openai-chat" if self.wire == "openai" else "anthropic-messages"


class Timeouts(_Strict):
    """The service's own timeouts, as the drill should assume them."""

    provider_s: float = Field(gt=0, le=60)  # how long it waits for one provider call
    job_s: float = Field(default=10.0, gt=0, le=600)  # how long an intent may take in all
    #: the quiet period (no call of the intent's tag) before an intent is closed; default the
    #: longer of 5 s and 3 x provider_s, to cover a queue's redelivery
    settle_s: float | None = Field(default=None, ge=0, le=600)

    @property
    def settle(self) -> float:
        return self.settle_s if self.settle_s is not None else max(5.0, 3 * self.provider_s)

    @property
    def backstop(self) -> float:
        """How long the drill's fakes hold an answer at most once its call arrived: three
        quarters of ``provider_s``, within the service's own timeout for the call."""
        return self.provider_s * 0.75


class Hedge(_Strict):
    allowed: bool = False
    after_s: float | None = Field(default=None, gt=0, le=60)


class Policy(_Strict):
    """The failover the service promises: at most this many billed provider calls per intent,
    and whether a hedge (a second call while the first still runs) may start, and when."""

    max_billed_calls: int = Field(default=2, ge=1, le=20)
    hedge: Hedge = Hedge()


class DrillSection(_Strict):
    submit: Submit
    observe: Observe | None = None
    providers: list[DrillProvider] = Field(min_length=1)
    timeouts: Timeouts
    policy: Policy = Policy()
    contract: str | None = None  # the contract the fallbacks serve: the lock judges them


class DrillFile(_Strict):
    """A profile that only drills (a gateway): a name and the drill section."""

    name: str = Field(min_length=1)
    drill: DrillSection


def interpolate(text: str, env: Mapping[str, str], *, src: YamlSource | None,
                loc: tuple[str | int, ...]) -> str:
    """``text`` with every ``${VAR}`` read from ``env`` (ConfigError naming the field if unset)."""
    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            message = f"${{{name}}} is not set in the environment"
            fix = f"export {name}=… before the drill (or write the value in the profile)"
            if src is None:
                raise ConfigError(message, field=".".join(map(str, loc)), fix=fix)
            raise src.error(message, loc, fix=fix)
        return env[name]

    return ENV_REF.sub(one, text)
