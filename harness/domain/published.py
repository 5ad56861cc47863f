"""The JSON edge of the verdict vocabulary: an event's words as a document publishes them.

An event speaks the engines' vocabularies (:mod:`harness.domain.verdicts`); a class whose field
is published in other words names that field's table in its ``PUBLISHED`` class variable (e.g.
``{"verdict": SCENARIO_WORD}``). :func:`published` writes an event as JSON data with those words
(what :func:`dataclasses.asdict` makes, the published fields mapped; :func:`word` says one field
so, for a renderer), :func:`engine_words` turns a document's data back into the engine's words
before it is validated and read, and :func:`published_fields` tells the JSON Schema which words
each field may hold. The documents written by hand look the same tables up where they write
and read: the lock file's records (``DECISION_WORD``, :func:`from_word`), ``drill.json``
(``JUDGED_WORD``, ``FINDING_WORD``) and a run folder's checks (``CHECK_WORD``).
"""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any, TypeVar

Table = Mapping[Any, str]
K = TypeVar("K")


def tables(kind: Any) -> dict[str, Table]:
    """The published fields of a dataclass (its ``PUBLISHED``), each with its table."""
    return dict(getattr(kind, "PUBLISHED", {}))


def published(obj: Any) -> Any:
    """``obj`` as :func:`dataclasses.asdict` makes it, each published field in its published
    word (an engine word without one is a bug: KeyError)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        words = tables(type(obj))
        return {f.name: (_word(words[f.name], getattr(obj, f.name)) if f.name in words
                         else published(getattr(obj, f.name)))
                for f in dataclasses.fields(obj)}
    if isinstance(obj, list | tuple):
        return type(obj)(published(v) for v in obj)
    if isinstance(obj, dict):
        return {published(k): published(v) for k, v in obj.items()}
    return copy.deepcopy(obj)


def from_word(table: Mapping[K, str], word: object) -> K | None:
    """The engine's word a table publishes as ``word`` (None: none), for a writer of its own
    (the lock file's records)."""
    return next((engine for engine, said in table.items() if said == word), None)


def word(obj: Any, name: str = "verdict") -> str:
    """The published word of one field of ``obj`` (a renderer says what the document says)."""
    return str(_word(tables(type(obj))[name], getattr(obj, name)))


def _word(table: Table, value: Any) -> Any:
    """A field's published word; "" (a field that says nothing, as a statistic's decision
    may) stays ""."""
    return value if value == "" else table[value]


@cache
def _hints(kind: type[Any]) -> dict[str, Any]:
    return typing.get_type_hints(kind)


@cache
def _back(kind: type[Any]) -> dict[str, dict[str, Any]]:
    return {name: {word: engine for engine, word in table.items()}
            for name, table in tables(kind).items()}


def _dataclass_arm(kind: Any) -> Any:
    """The one dataclass of ``X | None`` (else None)."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        arms = [a for a in typing.get_args(kind) if dataclasses.is_dataclass(a)]
        return arms[0] if len(arms) == 1 else None
    return kind if dataclasses.is_dataclass(kind) else None


def engine_words(kind: Any, data: Any) -> Any:
    """``data``, a document's JSON of a ``kind``, with each published field back in the
    engine's word (a word the table does not know is left for the validator to refuse)."""
    cls = _dataclass_arm(kind)
    if cls is not None and isinstance(data, dict):
        back, hints = _back(cls), _hints(cls)
        return {name: (back[name].get(value, value) if name in back
                       else engine_words(hints[name], value) if name in hints else value)
                for name, value in data.items()}
    if typing.get_origin(kind) in (tuple, list) and isinstance(data, list | tuple):
        item = typing.get_args(kind)[0]
        return [engine_words(item, v) for v in data]
    return data


def published_fields(kind: Any) -> Iterator[tuple[type[Any], str, list[str]]]:
    """Every dataclass reachable from ``kind`` with a published field: (class, field, its
    published words in order), for the JSON Schema."""
    seen: set[type[Any]] = set()
    todo = [kind]
    while todo:
        hint = todo.pop()
        for arm in (typing.get_args(hint) or (hint,)):
            if not dataclasses.is_dataclass(arm) or not isinstance(arm, type):
                todo.extend(a for a in typing.get_args(arm) if a is not Ellipsis)
                continue
            if arm in seen:
                continue
            seen.add(arm)
            for name, table in tables(arm).items():
                yield arm, name, list(dict.fromkeys(table.values()))
            todo.extend(_hints(arm).values())
