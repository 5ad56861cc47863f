"""Every command's --help teaches: a one-sentence description, its exit codes and an example
that parses; options that do nothing there are gone."""

from __future__ import annotations

import argparse
import importlib
import shlex
import subprocess
import sys

import pytest

from harness.cli import COMMANDS, build_parser


def every_parser() -> list[tuple[str, argparse.ArgumentParser]]:
    found = [("failover-harness", build_parser())]
    at = 0
    while at < len(found):
        name, parser = found[at]
        at += 1
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found += [(f"{name} {sub}", p) for sub, p in action.choices.items()]
    return found


@pytest.mark.parametrize("name,parser", every_parser(), ids=lambda v: v if isinstance(v, str)
                         else "")
def test_help_has_a_sentence_exit_codes_and_an_example_that_parses(
        name: str, parser: argparse.ArgumentParser) -> None:
    text = parser.format_help()
    description = parser.description or ""
    assert description[:1].isupper() and description.endswith("."), (name, description)
    assert "\nexit codes:\n" in text and "  2  bad input" in text, name
    examples = [line.strip() for line in text.split("\nexamples:\n", 1)[-1].splitlines()
                if line.strip().startswith("failover-harness ")]
    assert examples, f"{name}: no example"
    for example in examples:
        argv = [a for a in shlex.split(example)[1:] if a != "--help"]
        if "<run>" in example:
            continue  # a placeholder for a folder the user has
        args = build_parser().parse_args(argv)
        assert getattr(args, "_run", None), example


def test_gate_offers_no_option_that_calls_a_provider() -> None:
    gate = dict(every_parser())["failover-harness gate"]
    assert "--via" not in gate.format_help()


def test_export_offers_no_option_that_calls_a_provider() -> None:
    export = dict(every_parser())["failover-harness export"]
    assert "--via" not in export.format_help()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_table_gives_each_command_its_own_help_line(name: str) -> None:
    module_name, help_line = COMMANDS[name]
    assert help_line == importlib.import_module(module_name).HELP


def test_the_top_level_help_imports_no_command_and_one_command_only_its_own() -> None:
    probe = ("import sys; from harness.cli import build_parser; build_parser({}); "
             "print(sorted(m for m in sys.modules if m.startswith('harness.commands.')"
             " and not m.startswith('harness.commands._')))")
    for only, expected in ((None, []), ("'gate'", ["harness.commands.gate"])):
        out = subprocess.run([sys.executable, "-c", probe.format(only)], check=True,
                             capture_output=True, text=True, timeout=120).stdout
        assert out.strip() == str(expected), (only, out)


def test_every_option_and_argument_says_what_it_is() -> None:
    """No option without help (`scenarios matrix` had two; issue 34)."""
    bare = [f"{name} {action.option_strings or action.dest}"
            for name, parser in every_parser() for action in parser._actions
            if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
            and action.help in (None, "") and action.help is not argparse.SUPPRESS]
    assert bare == []


def test_help_names_where_a_default_really_is() -> None:
    """drill's --lock / --contracts are beside --providers or the gateway's --config (never
    "beside the config" alone, which a profile has none of); export names both gateways."""
    parsers = dict(every_parser())
    drill = parsers["failover-harness drill"].format_help()
    assert "beside --providers" in " ".join(drill.split())
    assert "LiteLLM" in COMMANDS["export"][1] and "Portkey" in COMMANDS["export"][1]
