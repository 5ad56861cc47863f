"""What a contract is: prompt, output schema, business model and rules, golden cases, thresholds."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

CompareKind = Literal["exact", "numeric", "set", "ignore"]
Stripping = Literal["fences", "prose"]


@dataclass(frozen=True, slots=True)
class CompareRule:
    """How one field of a business outcome is compared: exact, numeric ± tolerance, set, ignore."""

    kind: CompareKind = "exact"
    tolerance: float = 0.0

    def describe(self) -> str:
        return f"numeric ±{self.tolerance:g}" if self.kind == "numeric" else self.kind


@dataclass(frozen=True, slots=True)
class Rule:
    """A declarative business rule: when every ``when`` field matches, every ``expect`` field must.

    A value in ``when`` / ``expect`` is either one allowed value or a tuple of allowed values.
    """

    name: str
    when: Mapping[str, tuple[Any, ...]]
    expect: Mapping[str, tuple[Any, ...]]

    def violation(self, output: Mapping[str, Any]) -> str | None:
        """``None`` when ``output`` obeys the rule, else why not."""
        for key, allowed in self.when.items():
            if output.get(key) not in allowed:
                return None
        for key, allowed in self.expect.items():
            got = output.get(key)
            if got not in allowed:
                shown = allowed[0] if len(allowed) == 1 else list(allowed)
                return f"rule {self.name!r}: {key} must be {shown!r}, got {got!r}"
        return None


@dataclass(frozen=True, slots=True)
class Golden:
    """One golden case: an input for the prompt templates and the expected model output."""

    id: str
    input: Mapping[str, Any]
    expected: Mapping[str, Any]
    language: str = "en"
    source: str = ""  # file it came from, for error messages


@dataclass(frozen=True, slots=True)
class Business:
    """The contract's business code: a pydantic model that validates, and an optional function.

    ``outcome(output)`` validates the parsed output with the model (when there is one), checks
    the declarative rules, and returns what the business function makes of it (or the
    validated data when there is no function). Raises :class:`BusinessRejection` with a reason.
    """

    model: type[BaseModel] | None
    function: Callable[[Any], Mapping[str, Any]] | None
    rules: tuple[Rule, ...] = ()

    def outcome(self, output: Mapping[str, Any]) -> dict[str, Any]:
        value: Any = output
        if self.model is not None:
            try:
                value = self.model.model_validate(output)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "(root)"
                raise BusinessRejection(
                    f"business model {self.model.__name__} rejects it: {where}: {first['msg']}"
                ) from None
        for rule in self.rules:
            reason = rule.violation(output)
            if reason:
                raise BusinessRejection(reason)
        if self.function is not None:
            try:
                result = self.function(value)
            except (ValueError, TypeError, KeyError, LookupError) as exc:
                raise BusinessRejection(
                    f"business function raised {type(exc).__name__}: {exc}"
                ) from None
            return dict(result)
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json")
        return dict(value)


class BusinessRejection(Exception):
    """The business model, a rule or the business function refused an output."""


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Certification settings: temperature ceiling, samples per input, pass rate and the
    confidence it is proven at, the sampling budget of ``--adaptive``, validity."""

    max_temperature: float = 0.0
    samples: int = 3
    pass_threshold: float = 0.9
    valid_days: int = 30
    confidence: float = 0.95
    budget: int | None = None  # samples --adaptive may spend per provider (None: 20 per input)

    def budget_for(self, inputs: int) -> int:
        """The most samples ``--adaptive`` spends on one provider (whole rounds of ``inputs``)."""
        return self.budget if self.budget is not None else 20 * inputs


@dataclass(frozen=True, slots=True)
class Contract:
    """A loaded, validated contract. ``hash`` covers everything that changes behaviour."""

    id: str
    version: str
    directory: Path
    system_template: str
    user_template: str
    schema: Mapping[str, Any]
    allow_stripping: frozenset[str]
    business: Business
    goldens: tuple[Golden, ...]
    compare: Mapping[str, CompareRule]
    thresholds: Thresholds
    hash: str
    description: str = ""
    schema_name: str = field(default="")
    # file (relative to the folder) -> a short hash of its meaning: which file changed
    parts: Mapping[str, str] = field(default_factory=dict)

    def compare_rule(self, key: str) -> CompareRule:
        """The rule for ``key``; fields not listed are compared exactly."""
        return self.compare.get(key, CompareRule())

    @property
    def label(self) -> str:
        return f"{self.id}@{self.version}"
