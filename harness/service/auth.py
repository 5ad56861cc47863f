"""Bearer tokens → owners: loading them (YAML file or env) and looking them up, never echoing them.

A token is secret. It is kept only as its SHA-256 digest, and no message — error, log line or
response — ever contains it: configuration errors name the file and line (or the entry's
position in ``HARNESS_TOKENS``), never the token's text.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path

import yaml

from harness.domain.errors import ConfigError, HarnessError
from harness.yamlsrc import compose_tree

ENV_TOKENS = "HARNESS_TOKENS"
_TOKEN_RE = re.compile(r"[\x21-\x7e]{1,512}")  # header-safe: printable ASCII, no spaces
_OWNER_RE = re.compile(r"[\x21-\x7e]{1,255}")


class Unauthenticated(HarnessError):
    """A valid bearer token is required."""

    code = "unauthenticated"
    http_status = 401


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()


class TokenTable:
    """Which owner a bearer token belongs to. Holds digests only."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        self._owners = {_digest(token): owner for token, owner in tokens.items()}

    def __len__(self) -> int:
        return len(self._owners)

    @property
    def owners(self) -> frozenset[str]:
        return frozenset(self._owners.values())

    def owner_for(self, token: str | None) -> str | None:
        """The owner of ``token``, or ``None`` if it is missing or unknown."""
        if not token:
            return None
        return self._owners.get(_digest(token))


def _entry_problem(token: object, owner: object) -> str | None:
    """What is wrong with one ``token: owner`` entry (never quoting the token), or ``None``."""
    if not isinstance(token, str) or not _TOKEN_RE.fullmatch(token):
        return (
            "the token must be 1–512 printable ASCII characters without spaces "
            "(the token itself is not shown)"
        )
    if not isinstance(owner, str) or not _OWNER_RE.fullmatch(owner):
        return "the owner must be 1–255 printable ASCII characters without spaces"
    return None


def parse_tokens_env(value: str) -> TokenTable:
    """``"tok1=alice,tok2=bob"`` → a table; an error names the entry's position only."""
    fix = f'set {ENV_TOKENS}="<token>=<owner>,<token>=<owner>"'
    tokens: dict[str, str] = {}
    for index, entry in enumerate(value.split(","), start=1):
        entry = entry.strip()
        if not entry:
            continue
        token, sep, owner = entry.partition("=")
        where = f"{ENV_TOKENS} entry {index}"
        if not sep:
            raise ConfigError(f"{where} has no '='", field=ENV_TOKENS, fix=fix)
        problem = _entry_problem(token.strip(), owner.strip())
        if problem:
            raise ConfigError(f"{where}: {problem}", field=ENV_TOKENS, fix=fix)
        if token.strip() in tokens:
            raise ConfigError(f"{where} repeats an earlier token", field=ENV_TOKENS, fix=fix)
        tokens[token.strip()] = owner.strip()
    if not tokens:
        raise ConfigError(f"{ENV_TOKENS} holds no tokens", field=ENV_TOKENS, fix=fix)
    return TokenTable(tokens)


def load_tokens_file(path: str | Path) -> TokenTable:
    """A YAML mapping ``{token: owner}``; an error names the file and line, never the token."""
    path = Path(path)
    fix = "write one 'token: owner' pair per line, e.g.  s3cr3t-t0ken-1: alice"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            "file not found", file=str(path), fix="check the --tokens-file path"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read the file ({type(exc).__name__})", file=str(path), fix="save it as UTF-8"
        ) from None
    try:
        root = compose_tree(text, str(path))  # bounded: depth, aliases, control bytes
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        # The parser's message may quote the line, and so a token: say only where.
        raise ConfigError(
            "not valid YAML", file=str(path), line=mark.line + 1 if mark else None, fix=fix
        ) from None
    if root is None or not isinstance(root, yaml.MappingNode):
        line = root.start_mark.line + 1 if root is not None else None
        raise ConfigError("the file must be a mapping of token to owner", file=str(path),
                          line=line, fix=fix)
    tokens: dict[str, str] = {}
    for key, value in root.value:
        line = key.start_mark.line + 1
        if not isinstance(key, yaml.ScalarNode) or not isinstance(value, yaml.ScalarNode):
            raise ConfigError("each entry must be 'token: owner'", file=str(path), line=line,
                              fix=fix)
        token, owner = key.value, value.value
        problem = _entry_problem(token, owner)
        if problem:
            raise ConfigError(problem, file=str(path), line=line, fix=fix)
        if token in tokens:
            raise ConfigError("this token is listed twice", file=str(path), line=line,
                              fix="keep one line per token")
        tokens[token] = owner
    if not tokens:
        raise ConfigError("the file lists no tokens", file=str(path), fix=fix)
    return TokenTable(tokens)


def load_tokens(tokens_file: str | Path | None, env: Mapping[str, str]) -> TokenTable:
    """The file if given, else ``HARNESS_TOKENS``; neither is a configuration error."""
    if tokens_file:
        return load_tokens_file(tokens_file)
    if env.get(ENV_TOKENS):
        return parse_tokens_env(env[ENV_TOKENS])
    raise ConfigError(
        "no tokens are configured, so every request would be refused",
        field="--tokens-file",
        fix=f'pass --tokens-file tokens.yaml ({{token: owner}}) or set {ENV_TOKENS}="tok=alice"',
    )
