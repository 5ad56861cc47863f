"""The package's rooms look only down: the imports of ``harness/`` (read with ``ast``) against
the allowed edges listed in docs/architecture.md.

Three promises: no import circle between modules; no import from one room into another that
docs/architecture.md does not allow (so none runs up a floor); and no import inside a function
except for an optional extra, with a comment naming it. The exceptions still in the code are
listed below, each with the reason and who removes it; the lists may only shrink.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

# harness/ is read once per process (cached, ~1.3 s of CPU): these tests share one xdist worker
pytestmark = pytest.mark.one_worker("architecture")

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "harness"
DOC = ROOT / "docs" / "architecture.md"

# Edges that run against docs/architecture.md today (none: the gateways helper moved the
# file-sniffing dispatch to gateways/sources and certification takes its post-audits as
# arguments, issue 25 item 2).
KNOWN_EDGES: set[tuple[str, str]] = set()
# Circles still hidden by an import inside a function.
KNOWN_CIRCLES: list[set[str]] = []
# Imports inside functions without an optional extra, per module, as they stand: a ratchet (a
# module may lose some, never gain one). Most in commands/ keep `--help` fast; they go as the
# commands become thin.
INNER_BUDGET_FILE = ROOT / "tests" / "architecture_inner_imports.txt"
EXTRA_COMMENT = re.compile(r"#.*\boptional extra\b", re.IGNORECASE)


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (a submodule when it is one)
    line: int
    inner: bool  # inside a function
    extra: bool  # commented as an optional extra


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def resolve(module: str, names: list[str]) -> Iterator[str]:
    """``from module import a, b``: a submodule where a name is one, else the module."""
    for name in names:
        yield f"{module}.{name}" if f"{module}.{name}" in MODULES else module


def type_checking_nodes(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def imports_of(name: str, path: Path) -> Iterator[Import]:
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    skipped = type_checking_nodes(tree)
    inner = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
             for n in ast.walk(f) if n is not f}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            targets = list(resolve(node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        text = " ".join(lines[node.lineno - 1:(node.end_lineno or node.lineno)])
        for target in dict.fromkeys(t for t in targets if t.split(".")[0] == "harness"):
            yield Import(name, target, node.lineno, id(node) in inner,
                         bool(EXTRA_COMMENT.search(text)))


@cache
def imports() -> tuple[Import, ...]:
    """Every import of a harness module inside harness/, read once per process by the first test
    that asks: not at import, since every xdist worker imports this module to collect it."""
    return tuple(imp for name, path in MODULES.items() for imp in imports_of(name, path))


def room(module: str) -> str:
    """``harness.scenarios.runner`` → ``scenarios``; a top-level module is its own room."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "harness"


def allowed_edges() -> dict[str, set[str]]:
    """The ``room: rooms it may import`` lines of docs/architecture.md's "Allowed edges" block
    (a room's own modules are always allowed; ``*`` is any room; a dotted name is one module)."""
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"## Allowed edges\n.*?```text\n(.*?)```", text, re.DOTALL)
    assert block, f"{DOC}: no '## Allowed edges' section with a ```text block"
    edges: dict[str, set[str]] = {}
    for line in block.group(1).splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, targets = line.partition(":")
            edges[name.strip()] = {t for t in targets.replace(",", " ").split() if t}
    return edges


def permitted(imp: Import, edges: dict[str, set[str]]) -> bool:
    source, target = room(imp.source), room(imp.target)
    if source == target:
        return True
    allowed = edges.get(source, set())
    return "*" in allowed or target in allowed or any(
        imp.target == f"harness.{a}" or imp.target.startswith(f"harness.{a}.")
        for a in allowed if "." in a)


def test_every_room_of_the_package_is_listed_in_the_doc() -> None:
    edges = allowed_edges()
    rooms = {room(m) for m in MODULES}
    assert rooms <= set(edges), f"rooms missing from {DOC.name}: {sorted(rooms - set(edges))}"


def test_no_import_runs_against_the_allowed_edges() -> None:
    edges = allowed_edges()
    wrong = sorted({(i.source, i.target) for i in imports() if not permitted(i, edges)})
    unexpected = [f"{s} imports {t}" for s, t in wrong if (s, t) not in KNOWN_EDGES]
    assert not unexpected, "imports not allowed by docs/architecture.md:\n" + "\n".join(unexpected)
    gone = sorted(KNOWN_EDGES - set(wrong))
    assert not gone, f"fixed: remove from KNOWN_EDGES: {gone}"


def circles() -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan), over every import
    that runs (inside functions too: an import deferred into a function still closes a circle)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in imports():
        if imp.target in MODULES and imp.target != imp.source:
            graph[imp.source].add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                top = stack.pop()
                component.add(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle() -> None:
    found = circles()
    unexpected = [c for c in found if not any(c == k for k in KNOWN_CIRCLES)]
    assert not unexpected, "import circles: " + "; ".join(" ↔ ".join(sorted(c)) for c in unexpected)


def inner_budget() -> Counter[str]:
    budget: Counter[str] = Counter()
    for line in INNER_BUDGET_FILE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, count = line.split()
            budget[name] = int(count)
    return budget


def test_imports_inside_functions_only_for_an_optional_extra() -> None:
    counts = Counter(i.source for i in imports() if i.inner and not i.extra)
    budget = inner_budget()
    over = {m: (n, budget[m]) for m, n in counts.items() if n > budget[m]}
    assert not over, (
        "imports inside a function (allowed only for an optional extra, commented "
        "'# optional extra: <name>'): " + ", ".join(
            f"{m} has {n} (at most {b})" for m, (n, b) in sorted(over.items())))


def test_the_import_reader_sees_what_it_checks() -> None:
    # the reader must find a known edge, a known function-level import and the modules
    assert "harness.domain.verdicts" in MODULES
    assert any(i.source == "harness.scenarios.runner" and i.target.startswith("harness.domain")
               for i in imports())
    assert any(i.inner for i in imports())
    assert permitted(Import("harness.store.sqlite", "harness.domain.errors", 1, False, False),
                     allowed_edges())
    assert not permitted(Import("harness.domain.errors", "harness.store.sqlite", 1, False, False),
                         allowed_edges())


# The command line stays in the commands (issue 32): only cli.py and commands/ import argparse,
# and nothing assigns to the parsed arguments (a command builds a settings object instead).
# What still does, per module: a ratchet (the drill helper's command builds its settings next).
KNOWN_ARGS_ASSIGNMENTS: dict[str, int] = {"harness.commands.drill": 2}


def test_argparse_only_in_the_cli_and_the_commands() -> None:
    found = []
    for name, path in MODULES.items():
        if name == "harness.cli" or name.startswith("harness.commands."):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{name}:{node.lineno}" for n in names if n.split(".")[0] == "argparse"]
    assert not found, "argparse outside cli.py and commands/: " + ", ".join(found)


def _assigns_to_args(tree: ast.AST) -> int:
    count = 0
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
        count += sum(1 for t in targets for n in ast.walk(t) if isinstance(n, ast.Attribute)
                     and isinstance(n.value, ast.Name) and n.value.id == "args")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "setattr" and node.args
                and isinstance(node.args[0], ast.Name) and node.args[0].id == "args"):
            count += 1
    return count


def test_nothing_assigns_to_the_parsed_arguments() -> None:
    counts = {name: _assigns_to_args(ast.parse(path.read_text(encoding="utf-8")))
              for name, path in MODULES.items()}
    over = {m: n for m, n in counts.items() if n > KNOWN_ARGS_ASSIGNMENTS.get(m, 0)}
    assert not over, f"assignments to args (build a settings object instead): {over}"
    assert _assigns_to_args(ast.parse("args.x = 1\nsetattr(args, 'y', 2)")) == 2
