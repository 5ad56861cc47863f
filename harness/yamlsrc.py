"""YAML that remembers where each value came from, so a config error can name the line.

One parse gives both the node tree and the plain data; duplicate mapping keys are an error
(PyYAML would silently keep the last one). Used by every file loader: providers.yaml,
contracts, scenarios and target profiles.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from harness.domain.errors import ConfigError

_CParser: Any
try:  # libyaml's parser (PyYAML's wheels carry it)
    from yaml._yaml import CParser as _CParser
except ImportError:  # a PyYAML built without it: its pure-Python loader reads every file
    _CParser = None

# Limits on what a config file may ask of the loader, each refused in milliseconds.
MAX_DEPTH = 64  # nested collections; a config needs a handful
MAX_ALIASES = 100  # *alias uses; YAML anchors are rare in configs, a bomb needs many
MAX_VALUES = 200_000  # values after alias expansion (the "billion laughs" measure)
_T = TypeVar("_T")
_BLOCK_COMMENT = re.compile(r"[|>][-+0-9]*#")  # a block scalar's header, a comment right after
_TAG_THEN_FLOW = re.compile(r"![^\s,\[\]{}]*[,\[\]{}]")  # libyaml ends a tag at , [ ] { }
# C0 controls other than tab, LF and CR; DEL; C1 controls. YAML allows none of them raw.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


class _Limits(yaml.composer.Composer):
    """A composer of at most :data:`MAX_DEPTH` levels and :data:`MAX_ALIASES` aliases (its
    composer recurses, and an alias costs nothing to write)."""

    source: str
    depth: int
    aliases: int
    peek_event: Callable[[], yaml.Event]  # the parser's

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        line = event.start_mark.line + 1 if event.start_mark else None
        if isinstance(event, yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise ConfigError(
                    f"more than {MAX_ALIASES} aliases (*name): refused, as a document that "
                    "expands without bound would be", file=self.source, line=line,
                    fix="write the values out instead of repeating anchors",
                )
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise _too_deep(self.source, line)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


class _LimitedLoader(_Limits, yaml.SafeLoader):
    """PyYAML's safe loader (pure Python), within the limits; the one whose errors are said."""

    def __init__(self, text: str, source: str) -> None:
        super().__init__(text)
        self.source, self.depth, self.aliases = source, 0, 0

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        """A ``[`` or ``{`` beyond :data:`MAX_DEPTH` open ones, refused by the scanner: each
        open one may start a simple key, so the scanner reads up to 1,024 characters ahead of
        the composer, and each character costs it a look at every open one (``[`` × 20,000 took
        0.35 s of CPU before the composer's own check refused it). Every open flow collection is
        a node a level deeper, so nothing is refused here that the composer would take."""
        if self.flow_level >= MAX_DEPTH:
            raise _too_deep(self.source, self.line + 1)
        super().fetch_flow_collection_start(TokenClass)


if _CParser is not None:
    class _FastLoader(_Limits, yaml.constructor.SafeConstructor, yaml.resolver.Resolver,
                      _CParser):
        """The same loader with libyaml's reader, scanner and parser (in C, PyYAML's
        ``CSafeLoader``: about six times faster) under the same Python composer, limits and
        constructor: the same data and nodes, each starting at the same line (and column,
        but for an empty value's). What nothing reads may differ: a block collection's end,
        a block sequence's ``flow_style``."""

        def __init__(self, text: str, source: str) -> None:
            _CParser.__init__(self, text)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            self.source, self.depth, self.aliases = source, 0, 0

        def compose_scalar_node(self, anchor: Any) -> yaml.ScalarNode:
            node: yaml.ScalarNode = super().compose_scalar_node(anchor)
            node.style = node.style or None  # a plain scalar: None, as the Python parser says
            return node


def _fast(text: str) -> bool:
    """Whether libyaml may read ``text``: where it reads what PyYAML refuses or reads
    otherwise (a tab between tokens, a ``?`` in a flow collection, a comment right after a
    block scalar's ``|`` or ``>``, a tag followed by ``,`` ``[`` ``]`` ``{`` or ``}``, a byte
    order mark after the first character), PyYAML reads it, so that the file is read or
    refused as before. libyaml refuses the rest of what PyYAML refuses
    (tests/faults/test_yaml_loaders.py); its error is never said: PyYAML reads the file again
    and says its own."""
    return (_CParser is not None and "\t" not in text and "\ufeff" not in text[1:]
            and not ("?" in text and ("{" in text or "[" in text))
            and _BLOCK_COMMENT.search(text) is None and _TAG_THEN_FLOW.search(text) is None)


def _too_deep(source: str, line: int | None) -> ConfigError:
    return ConfigError(f"nested deeper than {MAX_DEPTH} levels", file=source, line=line,
                       fix="flatten the structure; a config needs only a few levels")


def check_text(text: str, source: str) -> None:
    """Refuse a control character (a NUL, an ESC…) with its line and column."""
    found = _CONTROL.search(text)
    if found is None:
        return
    line = text.count("\n", 0, found.start()) + 1
    column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
    raise ConfigError(
        f"a control character U+{ord(found.group()):04X} at column {column}", file=source,
        line=line, fix="remove it; inside a double-quoted string, write it as an escape "
        "(\\x1b, \\0) if the value needs it",
    )


def compose_tree(text: str, source: str) -> yaml.Node | None:
    """The node tree only, within the same limits (control bytes, depth, aliases, expansion):
    their :class:`ConfigError` quotes nothing of the text; a syntax error stays a
    ``yaml.YAMLError`` for the caller to word (the tokens file never quotes a line)."""
    check_text(text, source)

    def tree(loader: Any) -> yaml.Node | None:
        root: yaml.Node | None = loader.get_single_node()
        if root is not None:
            _check_expansion(root, source)
        return root

    return _read(text, source, tree)


def _read(text: str, source: str, build: Callable[[Any], _T]) -> _T:
    """``build(loader)`` with libyaml's loader where :func:`_fast` allows it; with PyYAML's
    own when it does not, or when libyaml's failed (PyYAML's error is the one said)."""
    if _fast(text):
        fast = None
        try:
            fast = _FastLoader(text, source)
            return build(fast)
        except Exception:  # PyYAML's loader reads it again and says its error
            pass
        finally:
            if fast is not None:
                fast.dispose()
    loader = _LimitedLoader(text, source)
    try:
        return build(loader)
    finally:
        loader.dispose()


def compose_checked(
    text: str, source: str, *, empty_fix: str | None = None
) -> tuple[yaml.Node, Any]:
    """The node tree and the plain data of one YAML document; ConfigError on bad YAML, a
    control character, excessive nesting or alias expansion."""
    check_text(text, source)

    def checked(loader: Any) -> tuple[yaml.Node, Any]:
        root: yaml.Node | None = loader.get_single_node()
        if root is None:
            raise ConfigError("the file is empty", file=source, line=1,
                              fix=empty_fix or "write the document (see the docs/ example)")
        _check_expansion(root, source)
        _check_duplicates(root, source, set())
        return root, loader.construct_document(root)

    try:
        return _read(text, source, checked)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        cause = _under_indented(text, line) if line else None
        if cause is not None:
            raise ConfigError(
                f"not valid YAML: line {line} is indented under this line, which already has "
                "a value: this line is probably indented less than its siblings", file=source,
                line=cause, fix=f"indent line {cause} like the lines of the same level above "
                f"it (or line {line} like line {cause})") from None
        problem = exc.problem or "invalid YAML"
        raise ConfigError(f"not valid YAML: {problem}", file=source, line=line,
                          fix="check the indentation and quoting on that line") from None
    except yaml.YAMLError as exc:  # a ReaderError: a character YAML does not allow
        position = getattr(exc, "position", None)
        line = text.count("\n", 0, position) + 1 if isinstance(position, int) else None
        reason = getattr(exc, "reason", None) or "invalid YAML"
        raise ConfigError(f"not valid YAML: {reason}", file=source, line=line,
                          fix="remove the character, or save the file as plain UTF-8 text") \
            from None
    except RecursionError:  # a guard behind the depth limit: never an internal error
        raise ConfigError(f"nested deeper than {MAX_DEPTH} levels", file=source,
                          fix="flatten the structure; a config needs only a few levels") from None


_KEY_VALUE = re.compile(r"^(\s*)(?:- )?[^\s#:][^:#]*:\s+[^\s#|>&*]")  # key: value on one line


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _under_indented(text: str, line: int) -> int | None:
    """The line to blame for a syntax error on ``line`` (1-based) that is indented deeper
    than the line before it while that one is ``key: value`` (a value on its own line, so
    nothing can nest under it) and is itself indented less than the line above it: that line
    was indented too little — YAML read it as a sibling of its parent, and only the next line
    fails. None when that is not the case."""
    lines = text.splitlines()
    if not 1 < line <= len(lines) or not lines[line - 1].strip():
        return None
    before = _previous(lines, line)
    above = _previous(lines, before) if before else None
    if before is None or above is None or not _KEY_VALUE.match(lines[before - 1]):
        return None
    deeper = _indent(lines[line - 1]) > _indent(lines[before - 1])
    return before if deeper and _indent(lines[before - 1]) < _indent(lines[above - 1]) else None


def _previous(lines: list[str], line: int) -> int | None:
    """The 1-based number of the last line before ``line`` that is neither blank nor a comment."""
    return next((n for n in range(line - 1, 0, -1)
                 if lines[n - 1].strip() and not lines[n - 1].lstrip().startswith("#")), None)


def _check_expansion(root: yaml.Node, source: str) -> None:
    """Refuse a document whose aliases expand it beyond :data:`MAX_VALUES` values, counted
    once per node (linear time), before anything expands it."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        total = 1
        if isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total += sum(size(item) for item in node.value)
        if total > MAX_VALUES:
            raise ConfigError(
                f"its aliases expand it to more than {MAX_VALUES:,} values", file=source,
                line=node.start_mark.line + 1,
                fix="write the values out instead of nesting anchors in anchors",
            )
        sizes[id(node)] = total
        return total

    size(root)


def _check_duplicates(node: yaml.Node, source: str, seen_nodes: set[int]) -> None:
    if id(node) in seen_nodes:  # an alias: its node was checked where it was anchored
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen:
                    raise ConfigError(
                        f"duplicate key {key.value!r} (first on line {seen[key.value]})",
                        file=source, line=key.start_mark.line + 1, field=str(key.value),
                        fix="keep one of them: YAML would silently drop the first",
                    )
                seen[key.value] = key.start_mark.line + 1
            _check_duplicates(value, source, seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _check_duplicates(item, source, seen_nodes)


def line_of(root: yaml.Node | None, loc: Sequence[Any]) -> int | None:
    """1-based line of the deepest node along ``loc`` (a key's line for a mapping entry)."""
    if root is None:
        return None
    node, line = root, root.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    node, line = value, key.start_mark.line + 1
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if not 0 <= part < len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


@dataclass(frozen=True, slots=True)
class YamlSource:
    """A parsed YAML file: its data, and its node tree for looking up line numbers."""

    path: Path
    data: Any
    root: yaml.Node | None

    def line_of(self, loc: tuple[str | int, ...]) -> int | None:
        """1-based line of the value at ``loc`` (or of its nearest existing parent)."""
        return line_of(self.root, loc)

    def error(self, message: str, loc: tuple[str | int, ...] = (), *, fix: str) -> ConfigError:
        """A :class:`ConfigError` pointing at ``loc`` in this file."""
        field = ".".join(str(p) for p in loc) or None
        return ConfigError(message, file=str(self.path), line=self.line_of(loc), field=field,
                           fix=fix)


def read_config_text(path: Path, *, missing_fix: str | None = None) -> str:
    """The text of a config file; missing, unreadable or not UTF-8 is a :class:`ConfigError`
    naming the file (and, for bad UTF-8, the line) with the fix."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError("file not found", file=str(path),
                          fix=missing_fix or "create it, or point the option at the right path"
                          ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read the file: {exc.strerror or exc}", file=str(path),
                          fix="check the path and its permissions") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
                          file=str(path), line=line,
                          fix="save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)") from None


def load_yaml(path: Path) -> YamlSource:
    """Read and parse ``path``; a missing file or a syntax error is a :class:`ConfigError`."""
    text = read_config_text(path)
    if not text.strip():
        return YamlSource(path=path, data=None, root=None)
    root, data = compose_checked(text, str(path))
    return YamlSource(path=path, data=data, root=root)
