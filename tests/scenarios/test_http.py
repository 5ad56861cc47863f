"""The HTTP target against real ``failover-harness serve`` processes: two replicas on one
database, tokens from the same file serve takes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import main
from harness.scenarios.model import Scenario
from harness.scenarios.runner import run_scenario
from tests.scenarios.conftest import SCENARIOS_DIR, SEED_FOUR, Opener
from tests.service.serving import TOKENS, ServeProcess

# its module fixtures are made once: under xdist every test of it runs on one worker
pytestmark = pytest.mark.one_worker("http-replicas")


def _tokens_file(folder: Path) -> Path:
    path = folder / "tokens.yaml"
    path.write_text("".join(f"{t}: {o}\n" for t, o in TOKENS.items()), encoding="utf-8")
    return path


def _replicas(db: str, folder: Path, tokens: Path) -> list[ServeProcess]:
    servers = []
    try:
        for n in range(2):
            servers.append(ServeProcess(db=db, log_path=folder / f"serve{n}.log",
                                        tokens_file=tokens, extra=["--no-access-log"]))
        for server in servers:
            server.wait_ready()
    except BaseException:
        for server in servers:
            server.stop()
        raise
    return servers


@pytest.fixture(scope="module")
def sqlite_replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Two serve processes on one SQLite file: their URLs (comma-separated) and tokens file."""
    folder = tmp_path_factory.mktemp("replicas")
    tokens = _tokens_file(folder)
    servers = _replicas(f"sqlite:///{folder / 'harness.db'}", folder, tokens)
    yield ",".join(s.url for s in servers), tokens
    for server in servers:
        server.stop()


def test_every_scenario_holds_over_http_across_replicas(
        open_targets: Opener, shipped: dict[str, Scenario],
        sqlite_replicas: tuple[str, Path]) -> None:
    urls, tokens = sqlite_replicas
    target = open_targets(urls, tokens_file=tokens)
    results = {name: run_scenario(s, target) for name, s in shipped.items()}
    failed = {n: [(c.checker, c.violations) for c in r.checks if c.verdict != "held"]
              for n, r in results.items() if r.status != "held"}
    assert failed == {}
    assert set(SEED_FOUR) <= set(results)


def test_the_http_history_is_the_in_process_history(
        open_targets: Opener, shipped: dict[str, Scenario],
        sqlite_replicas: tuple[str, Path]) -> None:
    urls, tokens = sqlite_replicas
    # serve digests lost payloads like the in-process store; declared, races carry the scheme
    http = open_targets(urls, tokens_file=tokens, race_digest="sha256-rfc8785")
    local = open_targets("sqlite")
    for name in SEED_FOUR:
        over_http = [op.to_line() for op in run_scenario(shipped[name], http).history]
        in_process = [op.to_line() for op in run_scenario(shipped[name], local).history]
        assert over_http == in_process, name


def test_an_owner_without_a_token_is_unknown_with_the_fix(
        open_targets: Opener, shipped: dict[str, Scenario], sqlite_replicas: tuple[str, Path],
        tmp_path: Path) -> None:
    urls, _ = sqlite_replicas
    only_alice = tmp_path / "alice.yaml"
    token = next(t for t, o in TOKENS.items() if o == "alice")
    only_alice.write_text(f"{token}: alice\n", encoding="utf-8")
    result = run_scenario(shipped["same_key_other_owner"],
                          open_targets(urls, tokens_file=only_alice))
    assert result.status == "unknown"  # runnable, but not judgeable as configured: never a pass
    assert result.reason == "no token for owner bob in the tokens file"
    assert result.fix == "add a token for bob to --tokens-file (or HARNESS_TOKENS)"


def test_the_cli_over_http_prints_a_replay_with_the_tokens_file(
        sqlite_replicas: tuple[str, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    urls, tokens = sqlite_replicas
    code = main(["scenarios", "run", str(SCENARIOS_DIR / "double_click.yaml"), "--target", urls,
                 "--tokens-file", str(tokens), "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "PASS      double_click" in out
    results = next((tmp_path / "latest" / "runs").iterdir()) / "results.json"
    text = results.read_text()
    assert f"--tokens-file {tokens}" in text
    assert not any(token in text or token in out for token in TOKENS)


@pytest.mark.postgres
def test_the_seed_four_hold_on_two_replicas_over_postgresql(
        open_targets: Opener, shipped: dict[str, Scenario], pg_dsn: str, tmp_path: Path) -> None:
    tokens = _tokens_file(tmp_path)
    servers = _replicas(pg_dsn, tmp_path, tokens)
    try:
        target = open_targets(",".join(s.url for s in servers), tokens_file=tokens)
        for name in (*SEED_FOUR, "triple_click_across_replicas"):
            assert run_scenario(shipped[name], target).status == "held", name
    finally:
        for server in servers:
            server.stop()
