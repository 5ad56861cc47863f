"""Hypothesis mutates every kind of config file the harness reads; whatever it makes, the
command ends with 0, 1, 2 or 3 (never 70, never a traceback), and on 2 nothing is written."""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "contracts" / "ticket_triage"
SNIPPETS = [
    b"\x00", b"\x1b[31m", b"\xff\xfe", b"\xc3", b"\x7f", b"\x85", b"1e999", b"-1e400", b"NaN",
    b".nan", b"[" * 300, b"{" * 300, b"&a [x, x]", b"*a", b"*undefined", b"<<: *a", b": ",
    b"- ", b"\t", b"{{ txt }}", b"{text}", b"'", b'"', b"\n", b"    ", b"~", b"!!binary AAA",
    b"!!python/object/apply:os.system [true]", b"?", b"%YAML 1.1\n---\n", b"---\n", b"...\n",
    b"\xef\xbb\xbf", b"99999999999999999999999999999999999999", b"null", b"[]", b"{}",
]


@st.composite
def mutations(draw: st.DrawFn, original: bytes) -> bytes:
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["insert", "delete", "duplicate", "bytes"]))
        if op == "insert":
            data[at:at] = draw(st.sampled_from(SNIPPETS))
        elif op == "delete":
            data[at:at + draw(st.integers(1, 40))] = b""
        elif op == "duplicate":
            end = data.find(b"\n", at)
            data[at:at] = data[at:end + 1 if end >= 0 else len(data)]
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


@contextmanager
def project() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="harness-fuzz-") as tmp:
        root = Path(tmp)
        shutil.copytree(CONTRACT, root / "contracts" / "ticket_triage",
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(ROOT / "providers.yaml", root / "providers.yaml")
        (root / "providers.lock.json").write_text(
            '{"lock_version": 2, "generated_by": "fuzz", "certifications": []}\n')
        yield root


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def _gate(root: Path) -> list[str]:
    return ["gate", "--providers", str(root / "providers.yaml"), "--report-dir",
            str(root / "reports")]


def _list_scenario(root: Path) -> list[str]:
    return ["scenarios", "list", str(root / "scenario.yaml")]


def _profile(root: Path) -> list[str]:
    return ["scenarios", "run", "--target", "http://127.0.0.1:9", "--target-profile",
            str(root / "profile.yaml"), "--report-dir", str(root / "reports"),
            str(ROOT / "scenarios" / "double_click.yaml")]


# kind: (the file in the project, where its original comes from, the command that reads it)
KINDS: dict[str, tuple[str, Path, Callable[[Path], list[str]]]] = {
    "providers": ("providers.yaml", ROOT / "providers.yaml", _gate),
    "contract": ("contracts/ticket_triage/contract.yaml", CONTRACT / "contract.yaml", _gate),
    "golden": ("contracts/ticket_triage/golden/en-cancel-legal.yaml",
               CONTRACT / "golden" / "en-cancel-legal.yaml", _gate),
    "schema": ("contracts/ticket_triage/schema.json", CONTRACT / "schema.json", _gate),
    "scenario": ("scenario.yaml", ROOT / "scenarios" / "double_click.yaml", _list_scenario),
    "profile": ("profile.yaml", ROOT / "examples" / "jobs.profile.yaml", _profile),
    "tokens": ("tokens.yaml", None, None),  # type: ignore[dict-item]
}
TOKENS = b"tok-alice-Zq7vR2mK9xLp4Wd8: alice\ntok-bob-Hn3sT6yB1cFg5Ue0: bob\n"


def _serve(root: Path, port: int) -> list[str]:
    return ["serve", "--db", f"sqlite:///{root / 'h.db'}", "--tokens-file",
            str(root / "tokens.yaml"), "--port", str(port)]


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_mutated_config_file_never_crashes_the_cli(kind: str, capsys) -> None:
    relative, source, command = KINDS[kind]
    original = TOKENS if source is None else source.read_bytes()

    @settings(max_examples=15, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutations(original))
    def check(mutated: bytes) -> None:
        with project() as root, socket.socket() as taken:
            (root / relative).write_bytes(mutated)
            before = _files(root)
            taken.bind(("127.0.0.1", 0))
            taken.listen()  # serve must never start: its port is taken
            args = _serve(root, taken.getsockname()[1]) if command is None else command(root)
            capsys.readouterr()
            code = main(args)
            out, err = capsys.readouterr()
            assert code in (0, 1, 2, 3), (code, err)
            assert "Traceback" not in out + err and "internal error" not in err, err
            if code == 2:
                assert "\n  fix: " in err or err.startswith("usage"), err
                assert _files(root) == before, "exit 2 wrote something"
                assert not (root / "reports").exists() or not any((root / "reports").iterdir())

    check()
