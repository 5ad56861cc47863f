"""The failover-harness pytest plugin: scenario files as test items, and fixtures for your tests.

Enabled by the ``pytest11`` entry point once failover-harness is installed. Imports stay light:
the engine is loaded only when a fixture or a scenario item is used.

* ``pytest --harness-target URL`` collects ``scenarios/*.yaml`` (any ``*.yaml`` in a folder
  named ``scenarios``) as test items, run against URL (``sqlite``, ``postgresql://…``,
  ``mutant:<name>``, ``http://host:port`` with ``--harness-tokens-file``): a violation fails
  the item with the broken promise and the replay command; ``not applicable`` skips it.
* Fixtures: ``harness_store`` (a fresh reference store), ``fake_provider`` (a factory for fake
  LLM providers on loopback), ``scenario_runner`` (run a scenario file or object on a target).
* Marker ``@pytest.mark.harness_target("mutant:owner-leak")`` sets the default target of
  ``scenario_runner`` for one test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.domain.errors import HarnessError
from harness.providers.fake import FakeProvider
from harness.scenarios.loader import load_scenario
from harness.scenarios.render import render_run
from harness.scenarios.runfolder import replay_command, write_run
from harness.scenarios.runner import run_scenario
from harness.scenarios.targets import open_target
from harness.store import open_store

if TYPE_CHECKING:
    from harness.scenarios.runner import RunResult


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("failover-harness")
    group.addoption("--harness-target", default=None, metavar="URL",
                    help="run scenarios/*.yaml as tests against URL (sqlite, postgresql://…, "
                    "mutant:<name>, http://host:port)")
    group.addoption("--harness-tokens-file", default=None, metavar="FILE",
                    help="HTTP targets: YAML {token: owner}")
    group.addoption("--harness-target-profile", default=None, metavar="FILE",
                    help="HTTP targets: a target profile for a service with another API")
    group.addoption("--harness-seed", type=int, default=None, metavar="N",
                    help="seed for simultaneous events (default: each scenario's own)")
    group.addoption("--harness-report-dir", default="reports", metavar="DIR",
                    help="run folders of violated scenarios go to DIR/runs (default: reports)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "harness_target(url): the target scenario_runner uses by default in this test",
    )
    config.addinivalue_line(
        "markers", "harness_scenario: a scenario file collected by --harness-target"
    )


#: the command line's option names, as the plugin spells them
_PLUGIN_OPTIONS = (("--tokens-file", "--harness-tokens-file"),
                   ("--target-profile", "--harness-target-profile"),
                   ("--target", "--harness-target"))


def pytest_sessionstart(session: pytest.Session) -> None:
    """A target that cannot be used as configured (no tokens, a refused token, nothing
    listening, a bad profile) stops the session once, in the plugin's option names — not as
    the same traceback in every scenario item."""
    config = session.config
    url = config.getoption("--harness-target", default=None)
    if not url:
        return

    try:
        target = _open_target(config, url)
        try:
            target.preflight()
        finally:
            target.close()
    except HarnessError as exc:
        text = str(exc)
        for cli, plugin in _PLUGIN_OPTIONS:
            text = text.replace(f"{cli} ", f"{plugin} ").replace(f"{cli}:", f"{plugin}:")
        raise pytest.UsageError(f"failover-harness: {text}") from None


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Collector | None:
    config = parent.config
    if (config.getoption("--harness-target") and file_path.suffix in (".yaml", ".yml")
            and file_path.parent.name == "scenarios"):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    """One scenario file: one test item."""

    def collect(self) -> Iterator[ScenarioItem]:
        scenario = load_scenario(self.path)
        item = ScenarioItem.from_parent(self, name=scenario.name, scenario=scenario)
        item.add_marker("harness_scenario")
        yield item


class ScenarioViolated(Exception):
    """A scenario broke a promise (the message has the details and the replay command)."""


class ScenarioItem(pytest.Item):
    def __init__(self, *, scenario: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario

    def runtest(self) -> None:
        config = self.config
        target_url = config.getoption("--harness-target")
        target = _open_target(config, target_url)
        try:
            result = run_scenario(self.scenario, target, seed=config.getoption("--harness-seed"))
        finally:
            target.close()
        if result.status == "not_applicable":
            pytest.skip(f"not applicable on {target_url}: {result.reason}")
        if result.status in ("broken", "unknown"):
            folder = write_run(result, Path(config.getoption("--harness-report-dir")))
            replay = replay_command(folder, target_url)
            raise ScenarioViolated("\n".join(render_run(result, replay=replay)))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioViolated):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"scenario {self.name}"


def _open_target(config: pytest.Config, url: str | None) -> Any:
    return open_target(url, tokens_file=config.getoption("--harness-tokens-file"),
                       profile=config.getoption("--harness-target-profile"))


@pytest.fixture
def harness_store(tmp_path: Path) -> Iterator[Any]:
    """A fresh reference store on a temporary SQLite file (closed after the test)."""

    store = open_store(f"sqlite:///{tmp_path / 'harness-store.db'}")
    yield store
    store.close()


@pytest.fixture
def fake_provider() -> Iterator[Callable[..., Any]]:
    """``fake_provider(kind="openai-chat", behaviour="conformant", answer=None)`` starts a fake
    LLM provider on a loopback port and returns its server (``.url``, ``.app.deliveries``);
    every server started is stopped after the test."""
    from harness.providers.fake_server import FakeServer  # optional extra: serve

    servers: list[Any] = []

    def start(kind: str = "openai-chat", behaviour: str = "conformant",
              answer: Callable[..., Any] | None = None) -> Any:
        server = FakeServer(FakeProvider(kind, behaviour, answer)).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def scenario_runner(request: pytest.FixtureRequest) -> Callable[..., RunResult]:
    """``scenario_runner(path_or_scenario, target=None, seed=None)`` runs one scenario and
    returns its result (``.status``, ``.checks``, ``.history``). The target defaults to the
    test's ``harness_target`` marker, then ``--harness-target``, then the embedded store."""
    marker = request.node.get_closest_marker("harness_target")
    default = (marker.args[0] if marker and marker.args
               else request.config.getoption("--harness-target") or "sqlite")

    def run(scenario: Any, target: str | None = None, seed: int | None = None) -> RunResult:
        if isinstance(scenario, str | Path):
            scenario = load_scenario(Path(scenario))
        opened = _open_target(request.config, target or default)
        try:
            return run_scenario(scenario, opened, seed=seed)
        finally:
            opened.close()

    return run
