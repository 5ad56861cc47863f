"""The ``failover-harness`` entry point: parse, run one command, turn errors into exit codes.

Commands live in :mod:`harness.commands`, one module each. :data:`COMMANDS` names each one's
module and one-line help, and only the chosen command's module is imported, so that
``failover-harness --help`` stays fast and a command imports what it needs at its top. A command
module exposes ``HELP`` (one imperative sentence), ``configure(parser)`` and ``run(args) -> int``,
and may set ``EXAMPLES`` and ``EXITS`` for its ``--help`` (:mod:`harness.commands._help`).

Exit codes: 0 every promise holds, 1 a violation or an ineligible provider, 2 bad input or
configuration, 3 no violation but some verdict unknown (missing, stale, indeterminate).
"""

# ruff: noqa: E402 - the early signal handlers below come before the (slow) imports
from __future__ import annotations

import os
import signal
import sys


def _starting(signum: int, frame: object) -> None:
    """Ctrl-C or SIGTERM while the CLI is still starting (importing): nothing was done yet, so
    nothing to undo, and no traceback: the exit code says which signal (130, 143)."""
    os._exit(128 + signum)


if __name__ == "__main__" or os.path.basename(sys.argv[0]) == "failover-harness":
    signal.signal(signal.SIGINT, _starting)  # main() replaces them with the run's own
    signal.signal(signal.SIGTERM, _starting)

import _thread
import argparse
import asyncio
import contextlib
import importlib
import re
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from harness import __version__
from harness.commands._help import describe, epilog
from harness.console import clean
from harness.domain.errors import HarnessError
from harness.domain.interrupt import interrupt_all, resume_all
from harness.extras import missing_extra
from harness.providers.secrets import install_log_redaction
from harness.reports.redaction import RedactingStream
from harness.reports.unfinished import abandon_unfinished, discard_unused, forget_unfinished

# name -> (module, its one-line HELP); keep sorted. Only the chosen command's module is
# imported (``--help`` lists them all from this table, fast); each module has the same ``HELP``
# (tests/cli/test_help.py), ``configure(parser)`` and ``run(args) -> int``.
COMMANDS: dict[str, tuple[str, str]] = {
    "certify": ("harness.commands.certify",
                "Certify fallback providers against their contracts and write the lock file"),
    "check": ("harness.commands.check",
              "Run the main job: scenarios on your service (or the reference store and its "
              "mutants), then certify and gate the providers"),
    "drill": ("harness.commands.drill",
              "Drill a running service's or gateway's failover from the provider side: hangs, "
              "late answers, 5xx, 429/529, resets, cut streams and double clicks"),
    "explore": ("harness.commands.explore",
                "Find, shrink and replay races in your service (through its Redis or PostgreSQL) "
                "or in a store, one step at a time"),
    "export": ("harness.commands.export",
               "Print a gateway config keeping only certified fallbacks: LiteLLM's fallback "
               "lists, or a Portkey config's targets"),
    "fake-provider": ("harness.commands.fake_provider",
                      "Serve a fake LLM provider (OpenAI or Anthropic wire format) with a chosen "
                      "behaviour"),
    "gate": ("harness.commands.gate",
             "Check that every auto failover link is certified at its current config (for CI)"),
    "merge": ("harness.commands.merge",
              "Merge the report folders of a run's shards (--shard K/N) into one run's report"),
    "replay": ("harness.commands.replay",
               "Replay a run folder or a repro folder and check that the history is reproduced "
               "exactly"),
    "scenarios": ("harness.commands.scenarios",
                  "Run, list or cross-check scenario files against a store or a service"),
    "serve": ("harness.commands.serve",
              "Run the reference HTTP service (API v1) over the reference store"),
}
_ALL = "*"

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT, EXIT_UNKNOWN = 0, 1, 2, 3
_STARTED = time.time()  # a report folder older than this is an earlier run's
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE: what a shell shows for `yes | head -1`


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one clear line and the fix, never a traceback."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        _print_error(f"{self.prog}: {message}", fix=f"run '{self.prog} --help' for the options")
        raise SystemExit(EXIT_BAD_INPUT)


def _print_error(message: str, fix: str | None = None) -> None:
    color = sys.stderr.isatty() and "NO_COLOR" not in os.environ
    red, reset = ("\033[31m", "\033[0m") if color else ("", "")
    # A message may quote a file or a service: printed as text (harness.console).
    print(f"{red}error:{reset} {clean(message)}", file=sys.stderr)
    if fix:
        print(f"  fix: {clean(fix)}", file=sys.stderr)


def build_parser(only: str | None = _ALL) -> argparse.ArgumentParser:
    """The parser; every command's module is imported and configured, or ``only`` that one
    (``None``: none, the top-level ``--help``; the others are listed from :data:`COMMANDS`)."""
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
    for name, (module_name, help_line) in COMMANDS.items():
        command = sub.add_parser(name, help=help_line)
        if only not in (_ALL, name):
            continue
        module = importlib.import_module(module_name)
        describe(command, module.HELP, getattr(module, "EXAMPLES", ()),
                 getattr(module, "EXITS", None))
        module.configure(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. ``argv`` None: the process's own command line — a signal then also
    makes sure the process ends within :data:`GRACE_S`, whatever a thread is doing."""
    with _signals(hard_exit=argv is None), _redacted_stdio():
        try:
            code = _main(argv)
        except KeyboardInterrupt as exc:  # while the command was being chosen and imported
            code = _interrupted(exc)
        except Exception:  # the signal's exception, wrapped by what it was raised in (an import
            if not _signalled:  # that builds a pydantic model); anything else is a bug
                raise
            code = _interrupted(_signal_exception())
        finally:
            forget_unfinished()  # what this command left is not the next command's to rename
    if _signalled and argv is None:  # interrupted, and everything is closed and written:
        _exit_now(code)  # skip the interpreter's teardown (seen: 1.8 s on a loaded machine)
    return code


def _main(argv: Sequence[str] | None) -> int:
    install_log_redaction()  # no registered secret reaches a log line, whatever logs it
    words = list(argv) if argv is not None else sys.argv[1:]
    parser = build_parser(_chosen(words))
    # the words as given, for the reports' header (set before parsing: nothing assigns to args)
    args = parser.parse_args(words, namespace=argparse.Namespace(_argv=words))
    if not getattr(args, "_run", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    guard = sys.stdout = _ClosedPipeGuard(sys.stdout)
    try:
        return _run(args)
    finally:
        if sys.stdout is guard:
            sys.stdout = guard.stream


@contextlib.contextmanager
def _redacted_stdio() -> Iterator[None]:
    """While a command runs, stdout and stderr remove every registered secret from whatever
    is printed (a command's line, a library's, a traceback): the last writer of each line."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, RedactingStream):
        sys.stdout = RedactingStream(sys.stdout)
    if not isinstance(sys.stderr, RedactingStream):
        sys.stderr = RedactingStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _chosen(words: Sequence[str]) -> str | None:
    """The command the words run (the first word that is not an option), if any."""
    for word in words:
        if not word.startswith("-"):
            return word if word in COMMANDS else None  # a typo: argparse names the choices
    return None


class Terminated(KeyboardInterrupt):
    """SIGTERM, unwound like Ctrl-C: in-flight work is cancelled, worker threads are waited
    for, stores are closed; the exit code is 143 (128 + SIGTERM) instead of 130."""


_signalled: list[int] = []  # the signal that interrupted the run, if one did

#: after Ctrl-C or SIGTERM, the process ends within this many seconds (the run unwinds first;
#: a thread still stuck then does not keep it alive, nor the ports it holds open)
GRACE_S = 1.0


@contextlib.contextmanager
def _signals(*, hard_exit: bool) -> Iterator[None]:
    """While a command runs (in the main thread): Ctrl-C raises KeyboardInterrupt and SIGTERM
    :class:`Terminated`, after every connection to a target was shut
    (:func:`harness.domain.interrupt.interrupt_all`); a second signal is ignored. With
    ``hard_exit`` the process also ends :data:`GRACE_S` after the signal, whatever still runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _signalled.clear()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        for each in (signal.SIGINT, signal.SIGTERM):  # the first one is being handled
            signal.signal(each, signal.SIG_IGN)
        if not _signalled:  # (not again when the interrupt is delivered a second time)
            _signalled.append(signum)
            interrupt_all()
            if hard_exit:
                _exit_after(GRACE_S, 128 + signum)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop here: unwind from where the main thread is
            raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt() from None
        # inside asyncio.run: what its own Ctrl-C handler does (cancel the run, then raise
        # KeyboardInterrupt from asyncio.run); an exception raised into the loop would leave a
        # task's "exception never retrieved" traceback
        runner = _asyncio_runner(frame)
        if runner is not None:
            runner[0]._on_sigint(signum, frame, runner[1])
            return
        for task in asyncio.all_tasks(loop):  # a loop run another way: cancel its tasks
            task.cancel()
        loop.call_soon_threadsafe(lambda: None)  # wake the loop to run the cancellations

    def on_unraisable(unraisable: Any) -> None:
        """The signal's exception raised inside a weakref callback or a ``__del__``, where
        Python only prints it ("Exception ignored in …") and goes on: deliver it again to the
        main thread, quietly, so the run does end."""
        if not (_signalled and isinstance(unraisable.exc_value, KeyboardInterrupt)):
            previous_hook(unraisable)
            return
        signum = signal.Signals(_signalled[0])
        try:
            signal.signal(signum, on_signal)
            _thread.interrupt_main(signum)
        except KeyboardInterrupt:
            # the handler ran at once, still inside this hook, where its exception would be
            # printed and dropped too: deliver it again from another thread once the hook is
            # over. The thread waits for a lock released as the hook's last step: started
            # bare, it delivered while Thread.start() still waited inside the hook (printed
            # "Exception ignored", and the signal was lost)
            signal.signal(signum, on_signal)
            over = _thread.allocate_lock()
            over.acquire()
            threading.Thread(target=_interrupt_when_released, args=(over, signum),
                             daemon=True).start()
            over.release()

    previous = {each: signal.signal(each, on_signal) for each in (signal.SIGINT, signal.SIGTERM)}
    previous_hook, sys.unraisablehook = sys.unraisablehook, on_unraisable
    try:
        yield
    finally:
        for each, handler in previous.items():
            signal.signal(each, handler)
        sys.unraisablehook = previous_hook
        if _signalled and not hard_exit:  # a command run in process: the process goes on
            resume_all()


def _interrupt_when_released(lock: _thread.LockType, signum: signal.Signals) -> None:
    """Deliver ``signum`` to the main thread once ``lock`` is released."""
    with lock:
        _thread.interrupt_main(signum)


def _asyncio_runner(frame: FrameType | None) -> tuple[Any, asyncio.Task[Any]] | None:
    """The ``asyncio.Runner`` running the main thread's loop (``asyncio.run``), and its main
    task: found on the interrupted stack, where ``Runner.run`` keeps them."""
    while frame is not None:
        runner, task = frame.f_locals.get("self"), frame.f_locals.get("task")
        if isinstance(runner, asyncio.Runner) and isinstance(task, asyncio.Task):
            return runner, task
        frame = frame.f_back
    return None


def _exit_now(code: int) -> None:
    """End the process now with ``code``, its output flushed."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _exit_after(seconds: float, code: int) -> None:
    """End the process with ``code`` in ``seconds`` unless it ended by itself (files are
    replaced whole, so none is torn; the kernel closes every port)."""

    timer = threading.Timer(seconds, _exit_now, (code,))
    timer.daemon = True
    timer.start()


def _run(args: argparse.Namespace) -> int:
    try:
        code = int(args._run(args))
        sys.stdout.flush()  # here, not at the interpreter's exit: a closed pipe is caught below
        return code
    except HarnessError as exc:
        _print_error(*_with_fix(exc))
        if exc.exit_code == EXIT_BAD_INPUT:
            discard_unused()  # bad input writes nothing: no empty report folder left behind
        return exc.exit_code
    except ImportError as exc:  # an optional part that is not installed: name the extra
        if _signalled:  # the signal's exception, raised inside an import, wrapped by it
            return _interrupted_by_signal(args)
        missing = missing_extra(exc)
        if missing is None:
            return _internal_error(exc)
        _print_error(*_with_fix(missing))
        return missing.exit_code
    except BrokenPipeError:  # a write that bypassed the guard met the closed pipe: said nowhere
        _quiet_stdout()
        return EXIT_CLOSED_PIPE
    except KeyboardInterrupt as exc:  # files are replaced whole (temp + rename): none is torn
        _say_stale_latest(args)
        sigterm = bool(_signalled) and _signalled[-1] == signal.SIGTERM  # (asyncio.run raises
        return _interrupted(Terminated() if sigterm else exc)  # KeyboardInterrupt for both)
    except asyncio.CancelledError:  # asyncio.run's tasks, cancelled by a signal
        if not _signalled:
            raise
        return _interrupted_by_signal(args)
    except Exception as exc:  # the last line of defence: no stack trace reaches a user
        if _signalled:  # the signal's KeyboardInterrupt, turned into another error by the code
            return _interrupted_by_signal(args)  # it was raised in (pydantic's schema build)
        _say_stale_latest(args)
        return _internal_error(exc)


def _interrupted_by_signal(args: argparse.Namespace) -> int:
    """The run was interrupted by the signal in :data:`_signalled`, whatever exception its
    delivery ended in: 130 or 143, never an internal error."""
    _say_stale_latest(args)
    return _interrupted(_signal_exception())


def _signal_exception() -> KeyboardInterrupt:
    """The exception of the signal in :data:`_signalled`."""
    return Terminated() if _signalled[-1] == signal.SIGTERM else KeyboardInterrupt()


def _say_stale_latest(args: argparse.Namespace) -> None:
    """A run that could not finish says that ``<report dir>/latest`` still shows an earlier
    run (it may be a PASS), never leaves it to look like this run's report."""
    if not hasattr(args, "report_dir"):
        return
    link = (args.report_dir or Path("reports")) / "latest"
    try:
        earlier = link.stat().st_mtime < _STARTED
    except OSError:  # no latest (or a dangling one): nothing that could be mistaken
        return
    if earlier:
        print(f"note: {link} still points at an earlier run ({link.resolve().name}); this run "
              "wrote no report", file=sys.stderr)


def _interrupted(exc: KeyboardInterrupt) -> int:
    terminated = isinstance(exc, Terminated)
    _print_error("terminated (SIGTERM)" if terminated else "interrupted")
    for folder in abandon_unfinished():  # a report folder with no results in it
        print(f"  unfinished report folder renamed: {folder}", file=sys.stderr)
    return 143 if terminated else 130


# The verbs a message's advice starts with ("…; use sqlite:///file.db or …").
_ADVICE = re.compile(r"(?:;|:| —) (?=(?:use|write|pass|send|set|run|remove|install|pip install|"
                     r"add|give|check|create|choose|rename|point|start|keep|fix|try|see) )")


def _with_fix(exc: HarnessError) -> tuple[str, str | None]:
    """The message and its fix line: bad input (exit 2) always has one. A message that
    carries its advice inline ("…; use X") has it moved to the fix line."""
    message = exc.message
    if exc.exit_code != EXIT_BAD_INPUT or "\n  fix:" in message:
        return message, None
    parts = _ADVICE.split(message, maxsplit=1)
    if len(parts) == 2 and parts[0].strip() and parts[1].strip():
        return parts[0].rstrip(), parts[1].strip()
    return message, ("correct what the message names and run the command again "
                     "('failover-harness COMMAND --help' lists the options)")


class _ClosedPipeGuard:
    """stdout, where a reader that went away (``check | head -2``) is a normal end: from the
    first write the closed pipe refuses, output goes to /dev/null and the command runs to its
    end — its lock file, report and exit code as without the pipe."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self.stream.write(text))
        except BrokenPipeError:
            _quiet_stdout(self.stream)
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            _quiet_stdout(self.stream)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _quiet_stdout(stream: Any = None) -> None:
    """Point stdout's file at /dev/null, and drain into it what the closed pipe did not take
    (the interpreter's last flush then raises nothing)."""
    stream = stream or sys.stdout
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
        stream.flush()
    except (OSError, ValueError, AttributeError):  # no file (captured): nothing will flush
        pass


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
