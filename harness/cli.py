"""The ``failover-harness`` entry point: parse, run one command, turn errors into exit codes.

Commands live in :mod:`harness.commands`, one module each, imported only when used so that
``failover-harness --help`` stays fast. A command module exposes ``HELP`` (one imperative
sentence), ``configure(parser)`` and ``run(args) -> int``, and may set ``EXAMPLES`` and
``EXITS`` for its ``--help`` (:mod:`harness.commands._help`).

Exit codes: 0 every promise holds, 1 a violation or an ineligible provider, 2 bad input or
configuration, 3 no violation but some verdict unknown (missing, stale, indeterminate).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from harness import __version__
from harness.commands._help import describe, epilog
from harness.console import clean
from harness.domain.errors import HarnessError
from harness.extras import missing_extra
from harness.providers.secrets import install_log_redaction

# name -> module; keep sorted. Each module: HELP, configure(parser), run(args) -> int.
COMMANDS: dict[str, str] = {
    "certify": "harness.commands.certify",
    "check": "harness.commands.check",
    "drill": "harness.commands.drill",
    "explore": "harness.commands.explore",
    "export": "harness.commands.export",
    "fake-provider": "harness.commands.fake_provider",
    "gate": "harness.commands.gate",
    "replay": "harness.commands.replay",
    "scenarios": "harness.commands.scenarios",
    "serve": "harness.commands.serve",
}

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT, EXIT_UNKNOWN = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one clear line and the fix, never a traceback."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        _print_error(f"{self.prog}: {message}", fix=f"run '{self.prog} --help' for the options")
        raise SystemExit(EXIT_BAD_INPUT)


def _print_error(message: str, *, fix: str | None = None) -> None:
    color = sys.stderr.isatty() and "NO_COLOR" not in os.environ
    red, reset = ("\033[31m", "\033[0m") if color else ("", "")
    # A message may quote a file or a service: printed as text (harness.console).
    print(f"{red}error:{reset} {clean(message)}", file=sys.stderr)
    if fix:
        print(f"  fix: {clean(fix)}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="failover-harness",
        description="Prove one intent stays one job, and certify fallbacks before failover.",
        epilog=epilog((("check the harness itself, offline", "failover-harness check"),
                       ("the options, exit codes and examples of a command",
                        "failover-harness check --help"))),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        command = sub.add_parser(name, help=module.HELP)
        describe(command, module.HELP, getattr(module, "EXAMPLES", ()),
                 getattr(module, "EXITS", None))
        module.configure(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    install_log_redaction()  # no registered secret reaches a log line, whatever logs it
    parser = build_parser()
    args = parser.parse_args(argv)
    args._argv = list(argv) if argv is not None else sys.argv[1:]  # for the reports' header
    if not getattr(args, "_run", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        return int(args._run(args))
    except HarnessError as exc:
        _print_error(exc.message)
        return exc.exit_code
    except ImportError as exc:  # an optional part that is not installed: name the extra
        missing = missing_extra(exc)
        if missing is None:
            return _internal_error(exc)
        _print_error(missing.message)
        return missing.exit_code
    except KeyboardInterrupt:
        _print_error("interrupted")
        return 130
    except Exception as exc:  # the last line of defence: no stack trace reaches a user
        return _internal_error(exc)


def _internal_error(exc: Exception) -> int:
    _print_error(
        f"internal error ({type(exc).__name__}): {exc}",
        fix="this is a bug in failover-harness; rerun with HARNESS_DEBUG=1 for the traceback",
    )
    if os.environ.get("HARNESS_DEBUG"):
        raise exc
    return 70


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
