"""What every command's ``--help`` ends with: its exit codes and one or two examples, in one
voice (an imperative sentence for the description; a comment, then the command, per example).

A command module may set ``EXITS`` (code -> meaning; the judging commands' meanings otherwise;
2 is always bad input) and ``EXAMPLES`` (pairs of what it does and the command line).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

BAD_INPUT = "bad input or configuration: file:line (field), what is wrong, and the fix"
JUDGING: dict[int, str] = {
    0: "every promise holds",
    1: "a promise is broken, or an auto failover link is ineligible",
    3: "nothing broken, but some verdict is unknown (the summary says what to do)",
}


def epilog(examples: Sequence[tuple[str, str]], exits: Mapping[int, str] | None = None) -> str:
    lines = ["exit codes:"]
    codes = {**(exits or JUDGING), 2: BAD_INPUT}  # every command: exit 2 means the same
    lines += [f"  {code}  {meaning}" for code, meaning in sorted(codes.items())]
    if examples:
        lines += ["", "examples:"]
        for what, command in examples:
            lines += [f"  # {what}", f"  {command}"]
    return "\n".join(lines)


def describe(parser: argparse.ArgumentParser, sentence: str,
             examples: Sequence[tuple[str, str]] = (),
             exits: Mapping[int, str] | None = None) -> None:
    """Give ``parser`` its description (a sentence), exit codes and examples."""
    parser.description = sentence if sentence.endswith(".") else sentence + "."
    parser.epilog = epilog(examples, exits)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
