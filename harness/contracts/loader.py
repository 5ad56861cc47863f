"""Load ``contracts/<name>/contract.yaml`` (schema, golden cases, business module) as a Contract.

Every problem is a :class:`ConfigError` naming the file, the line, the field and the fix.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any, Literal

import jinja2
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.contracts.model import (
    Business,
    BusinessRejection,
    CompareRule,
    Contract,
    Golden,
    Rule,
    Thresholds,
)
from harness.contracts.prompt_check import check_prompts
from harness.contracts.schema_file import load_schema
from harness.domain.errors import ConfigError
from harness.domain.fingerprint import canonical_json
from harness.validation import explain
from harness.yamlsrc import YamlSource, load_yaml

CONTRACT_FILE = "contract.yaml"
_ID_RE = r"^[a-z][a-z0-9_\-]{0,63}$"
_REF_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class _Prompt(_Strict):
    system: str = Field(min_length=1)
    user: str = Field(min_length=1)


class _Output(_Strict):
    schema_: str = Field(alias="schema", min_length=1)
    allow_stripping: list[Literal["fences", "prose"]] = []


class _RuleSpec(_Strict):
    name: str = Field(min_length=1)
    when: dict[str, Any] = {}
    expect: dict[str, Any] = Field(min_length=1)


class _BusinessSpec(_Strict):
    model: str | None = None
    function: str | None = None
    rules: list[_RuleSpec] = []

    @field_validator("model", "function")
    @classmethod
    def _ref(cls, value: str | None) -> str | None:
        if value is not None and not _REF_RE.match(value):
            raise ValueError("must look like 'module:Name' (a .py file in the contract folder)")
        return value


class _NumericSpec(_Strict):
    numeric: float = Field(ge=0)


class _CertSpec(_Strict):
    max_temperature: float = Field(ge=0, le=2)
    samples: int = Field(default=3, ge=1, le=50)
    pass_threshold: float = Field(default=0.9, gt=0, le=1)
    confidence: float = Field(default=0.95, ge=0.5, lt=1)
    budget: int | None = Field(default=None, ge=1, le=1_000_000)
    valid_days: int = Field(default=30, ge=1, le=366)

    @field_validator("pass_threshold")
    @classmethod
    def _provable(cls, value: float) -> float:
        if value >= 1:
            raise ValueError(
                "a pass rate of 1 cannot be proven by sampling (no number of samples gives a "
                "lower confidence bound of 1): use e.g. 0.99"
            )
        return value


class _ContractSpec(_Strict):
    id: str = Field(pattern=_ID_RE)
    version: str | int = Field()
    description: str = ""
    prompt: _Prompt
    output: _Output
    business: _BusinessSpec = _BusinessSpec()
    golden: str = "golden"
    compare: dict[str, Literal["exact", "set", "ignore"] | _NumericSpec] = {}
    certification: _CertSpec


class _GoldenSpec(_Strict):
    id: str | None = Field(default=None, pattern=r"^[\w\-.]{1,80}$")
    language: str = Field(default="en", min_length=2, max_length=16)
    input: dict[str, Any]
    expected: dict[str, Any]


def _pydantic_error(src: YamlSource, exc: ValidationError) -> ConfigError:
    message, loc, fix = explain(_ContractSpec, exc.errors(), docs="docs/contracts.md")
    loc = tuple("schema" if p == "schema_" else p for p in loc)
    return src.error(message, loc, fix=fix)


def load_contract(directory: Path) -> Contract:
    """Load and validate the contract in ``directory``."""
    src = load_yaml(directory / CONTRACT_FILE)
    if not isinstance(src.data, dict):
        raise src.error("the contract must be a YAML mapping", fix="see docs/contracts.md")
    try:
        spec = _ContractSpec.model_validate(src.data)
    except ValidationError as exc:
        raise _pydantic_error(src, exc) from None
    if spec.id != directory.name:
        raise src.error(
            f"id {spec.id!r} differs from the folder name {directory.name!r}",
            ("id",),
            fix=f"rename the folder to {spec.id!r} or set id: {directory.name}",
        )
    for name in ("system", "user"):
        template = getattr(spec.prompt, name)
        try:
            jinja2.Environment().parse(template)
        except jinja2.TemplateSyntaxError as exc:
            raise src.error(
                f"template syntax error: {exc.message} (template line {exc.lineno})",
                ("prompt", name),
                fix="fix the Jinja2 syntax",
            ) from None
    schema = load_schema(src, directory / spec.output.schema_)
    business = _load_business(src, spec, directory)
    goldens = _load_goldens(src, directory / spec.golden)
    for golden in goldens:
        unknown = set(golden.expected) - set(schema.get("properties", {}))
        if unknown and schema.get("properties"):
            raise ConfigError(
                f"expected output has key(s) {sorted(unknown)} that the schema does not define",
                file=golden.source, field="expected", fix="fix the golden case or the schema",
            )
    _check_expectations(goldens, schema, business)
    compare = {
        key: CompareRule("numeric", rule.numeric)
        if isinstance(rule, _NumericSpec)
        else CompareRule(rule)
        for key, rule in spec.compare.items()
    }
    cert = spec.certification
    contract = Contract(
        id=spec.id,
        version=str(spec.version),
        description=spec.description,
        directory=directory,
        system_template=spec.prompt.system,
        user_template=spec.prompt.user,
        schema=schema,
        schema_name=re.sub(r"[^a-zA-Z0-9_-]", "_", spec.id)[:64],
        allow_stripping=frozenset(spec.output.allow_stripping),
        business=business,
        goldens=goldens,
        compare=compare,
        thresholds=Thresholds(
            max_temperature=cert.max_temperature,
            samples=cert.samples,
            pass_threshold=cert.pass_threshold,
            valid_days=cert.valid_days,
            confidence=cert.confidence,
            budget=cert.budget,
        ),
        hash=_contract_hash(spec, schema, goldens, business, directory),
        parts=_contract_parts(spec, schema, goldens, directory),
    )
    check_prompts(src, contract)  # a template typo is bad input here, never a provider's fault
    return contract


def load_contracts(root: Path) -> dict[str, Contract]:
    """Every contract under ``root`` (one folder each), by id."""
    if not root.is_dir():
        raise ConfigError(
            "contracts folder not found", file=str(root),
            fix="pass --contracts DIR pointing at the folder holding <name>/contract.yaml",
        )
    contracts = {}
    for folder in sorted(p for p in root.iterdir() if (p / CONTRACT_FILE).is_file()):
        contract = load_contract(folder)
        contracts[contract.id] = contract
    return contracts


def _import_ref(src: YamlSource, directory: Path, ref: str, field: str, contract_id: str) -> Any:
    module_name, attr = ref.split(":")
    path = directory.joinpath(*module_name.split(".")).with_suffix(".py")
    if not path.is_file():
        raise src.error(
            f"module file {path} not found", ("business", field),
            fix=f"create {path.name} in the contract folder or fix {field}",
        )
    unique = f"_harness_contract_{contract_id}_{module_name.replace('.', '_')}"
    module = sys.modules.get(unique)
    if module is None or getattr(module, "__file__", None) != str(path):
        spec = importlib.util.spec_from_file_location(unique, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[unique] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[unique]
            raise src.error(
                f"importing {path.name} failed: {type(exc).__name__}: {exc}", ("business", field),
                fix=f"fix {path}",
            ) from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise src.error(
            f"{path.name} has no {attr!r}", ("business", field), fix=f"define {attr} in {path}"
        ) from None


def _load_business(src: YamlSource, spec: _ContractSpec, directory: Path) -> Business:
    model = function = None
    if spec.business.model:
        model = _import_ref(src, directory, spec.business.model, "model", spec.id)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise src.error(
                f"{spec.business.model} is not a pydantic model class", ("business", "model"),
                fix="point it at a pydantic.BaseModel subclass",
            )
    if spec.business.function:
        function = _import_ref(src, directory, spec.business.function, "function", spec.id)
        if not callable(function):
            raise src.error(
                f"{spec.business.function} is not callable", ("business", "function"),
                fix="point it at a function taking the validated output",
            )
    if model is None and function is None and not spec.business.rules:
        raise src.error(
            "the contract has no business model, function or rules", ("business",),
            fix="set business.model: module:Class (pydantic) and/or business.rules",
        )

    def _allowed(value: Any) -> tuple[Any, ...]:
        return tuple(value) if isinstance(value, list) else (value,)

    rules = tuple(
        Rule(
            name=r.name,
            when={k: _allowed(v) for k, v in r.when.items()},
            expect={k: _allowed(v) for k, v in r.expect.items()},
        )
        for r in spec.business.rules
    )
    return Business(model=model, function=function, rules=rules)


def _load_goldens(src: YamlSource, folder: Path) -> tuple[Golden, ...]:
    files = sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.yml")) if folder.is_dir() else []
    if not files:
        raise src.error(
            f"no golden cases in {folder}", ("golden",),
            fix="add golden/<case>.yaml files with input: and expected:",
        )
    goldens: list[Golden] = []
    seen: dict[str, Path] = {}
    for path in files:
        gsrc = load_yaml(path)
        if not isinstance(gsrc.data, dict):
            raise gsrc.error("a golden case must be a YAML mapping", fix="see docs/contracts.md")
        try:
            g = _GoldenSpec.model_validate(gsrc.data)
        except ValidationError as exc:
            raise _pydantic_error(gsrc, exc) from None
        gid = g.id or path.stem
        if gid in seen:
            raise gsrc.error(
                f"golden id {gid!r} is also used by {seen[gid].name}", ("id",),
                fix="give every golden case its own id",
            )
        seen[gid] = path
        goldens.append(Golden(gid, g.input, g.expected, g.language, str(path)))
    return tuple(goldens)


def _check_expectations(
    goldens: tuple[Golden, ...], schema: dict[str, Any], business: Business
) -> None:
    """Every golden expectation must itself pass the schema and the business code."""
    validator = Draft202012Validator(schema)
    for golden in goldens:
        error = next(iter(validator.iter_errors(golden.expected)), None)
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            path = ("expected", *error.absolute_path)
            raise ConfigError(
                f"the expected output breaks the contract's schema at {where}: {error.message}",
                file=golden.source, line=load_yaml(Path(golden.source)).line_of(path),
                field=".".join(str(p) for p in path), fix="fix the golden case or the schema",
            )
        try:
            business.outcome(golden.expected)
        except BusinessRejection as exc:
            raise ConfigError(
                f"the expected output is rejected by the business code: {exc}",
                file=golden.source, field="expected", fix="fix the golden case or the model",
            ) from None


def _business_sources(spec: _ContractSpec, directory: Path) -> dict[str, Path]:
    """module name -> its .py file, for the business model and function."""
    sources: dict[str, Path] = {}
    for ref in (spec.business.model, spec.business.function):
        if ref:
            module = ref.split(":")[0]
            sources[module] = directory.joinpath(*module.split(".")).with_suffix(".py")
    return sources


def _contract_parts(
    spec: _ContractSpec, schema: dict[str, Any], goldens: tuple[Golden, ...], directory: Path,
) -> dict[str, str]:
    """A short hash per file of the contract (its meaning, as in the contract hash), so a
    certification made stale by a change can name the file that changed."""
    def short(value: Any) -> str:
        return hashlib.sha256(canonical_json(value)).hexdigest()[:16]

    def rel(path: Path | str) -> str:
        try:
            return Path(path).relative_to(directory).as_posix()
        except ValueError:
            return Path(path).name

    parts = {CONTRACT_FILE: short(spec.model_dump(mode="json", by_alias=True)),
             rel(directory / spec.output.schema_): short(schema)}
    for g in goldens:
        parts[rel(g.source)] = short(
            {"id": g.id, "language": g.language, "input": g.input, "expected": g.expected})
    for path in _business_sources(spec, directory).values():
        parts[rel(path)] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return dict(sorted(parts.items()))


def _contract_hash(
    spec: _ContractSpec,
    schema: dict[str, Any],
    goldens: tuple[Golden, ...],
    business: Business,
    directory: Path,
) -> str:
    """SHA-256 over the contract's meaning: spec, schema, golden cases and business source."""
    sources = {module: hashlib.sha256(path.read_bytes()).hexdigest()
               for module, path in _business_sources(spec, directory).items()}
    document = {
        "spec": spec.model_dump(mode="json", by_alias=True),
        "schema": schema,
        "goldens": [
            {"id": g.id, "language": g.language, "input": g.input, "expected": g.expected}
            for g in goldens
        ],
        "business_sources": sources,
    }
    return "sha256:" + hashlib.sha256(canonical_json(document)).hexdigest()
