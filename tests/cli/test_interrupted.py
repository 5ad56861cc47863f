"""A signal stops a command with its own exit code (130 for Ctrl-C, 143 for SIGTERM) and no
internal error, whatever exception the signal's delivery ended up as."""

from __future__ import annotations

import signal

import pytest

from harness import cli
from harness.commands import gate


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_whose_exception_another_error_wrapped_is_still_the_signals_exit(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], signum: int,
        code: int) -> None:
    """Seen in CI: a Ctrl-C while pydantic built a model's validator (models are built on first
    use) came out of pydantic-core as a ``SchemaError`` naming the ``KeyboardInterrupt``, and the
    CLI said "internal error", exit 70. Whatever error the signal's exception ends up as, the
    run was interrupted: 130 or 143, and no internal error."""
    def run(args: object) -> int:
        try:
            signal.raise_signal(signum)  # the CLI's handler raises the signal's exception here
        except KeyboardInterrupt as exc:  # as pydantic-core's schema build turns it into its own
            raise RuntimeError(f'Error building "literal" validator: {exc!r}') from None
        return 0

    monkeypatch.setattr(gate, "run", run)
    assert cli.main(["gate"]) == code
    err = capsys.readouterr().err
    assert "internal error" not in err, err
    assert ("terminated (SIGTERM)" if signum == signal.SIGTERM else "interrupted") in err, err
