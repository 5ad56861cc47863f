"""How the service is told who is asking: a profile's ``owners:``.

One of ``header``, ``cookie`` or ``query`` names where the owner goes; ``value`` is what goes
there, with ``{owner}`` (the scenario's owner name: alice, bob — not a secret) or ``{token}`` (a
token per owner from ``--tokens-file``: a secret, never shown). The default is today's
``auth:``: ``{header: Authorization, value: "Bearer {token}"}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.target.errors import ProfileValueError

FORMS_FIX = ('write owners: {header: X-Owner, value: "{owner}"}, {header: Authorization, '
             'value: "Bearer {token}"}, {cookie: session, value: "{owner}"} or {query: owner, '
             'value: "{owner}"}')


class Owners(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    header: str | None = Field(default=None, min_length=1)
    cookie: str | None = Field(default=None, min_length=1)
    query: str | None = Field(default=None, min_length=1)
    #: empty: "Bearer {token}" in the Authorization header; any other place must say its value
    value: str = ""

    @model_validator(mode="after")
    def _one_place(self) -> Owners:
        places = [p for p in (self.header, self.cookie, self.query) if p is not None]
        if len(places) > 1:
            raise ProfileValueError("names more than one place for the owner", FORMS_FIX)
        if not places:
            object.__setattr__(self, "header", "Authorization")
        if not self.value:
            if self.header is None or self.header.lower() != "authorization":
                raise ProfileValueError(
                    f"has no value: say what goes in the {self.place}, "
                    '"{owner}" (the owner\'s name) or "{token}" (a token per owner)', FORMS_FIX)
            object.__setattr__(self, "value", "Bearer {token}")
        if ("{owner}" in self.value) == ("{token}" in self.value):
            raise ProfileValueError(
                "value needs exactly one of {owner} (the owner's name) or {token} (a token "
                "per owner from --tokens-file)", FORMS_FIX)
        return self

    @property
    def needs_tokens(self) -> bool:
        """The service is told a token (a secret from --tokens-file), not the owner's name."""
        return "{token}" in self.value

    @property
    def place(self) -> str:
        """Where the owner goes, as messages name it (``header X-Owner``)."""
        if self.cookie is not None:
            return f"cookie {self.cookie}"
        if self.query is not None:
            return f"query parameter {self.query}"
        return f"header {self.header}"


@dataclass(frozen=True)
class Presented:
    """What a request carries to say who asks."""

    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)


def present(owners: Owners, owner: str, token: str | None) -> Presented:
    """The owner ``owner`` as the service is told it (nothing: a token form with no token)."""
    if owners.needs_tokens:
        if token is None:
            return Presented()
        value = owners.value.replace("{token}", token)
    else:
        value = owners.value.replace("{owner}", owner)
    if owners.cookie is not None:
        return Presented(headers={"Cookie": f"{owners.cookie}={value}"})
    if owners.query is not None:
        return Presented(params={owners.query: value})
    assert owners.header is not None
    return Presented(headers={owners.header: value})
