"""The failover-harness pytest plugin: scenario files as test items, and fixtures for your tests.

Enabled by the ``pytest11`` entry point once failover-harness is installed, so every pytest run
in that environment loads this module, whether it uses the plugin or not. It imports only pytest:
the engine (:mod:`harness.pytest_plugin.engine`: stores, targets, httpx, the scenario runner;
about 0.3 s of CPU) is loaded when a target is given, or a fixture of the plugin is used.

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

import importlib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from harness.scenarios.runner import RunResult

ENGINE = "harness.pytest_plugin.engine"


def _engine() -> ModuleType:
    """The plugin's engine, imported on first use (as the CLI imports only the chosen command)."""
    return importlib.import_module(ENGINE)


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


def pytest_sessionstart(session: pytest.Session) -> None:
    """A target that cannot be used as configured (no tokens, a refused token, nothing
    listening, a bad profile) stops the session once, in the plugin's option names — not as
    the same traceback in every scenario item."""
    url = session.config.getoption("--harness-target", default=None)
    if url:
        _engine().check_target(session.config, url)


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Collector | None:
    if (parent.config.getoption("--harness-target") and file_path.suffix in (".yaml", ".yml")
            and file_path.parent.name == "scenarios"):
        collector: pytest.Collector = _engine().ScenarioFile.from_parent(parent, path=file_path)
        return collector
    return None


@pytest.fixture
def harness_store(tmp_path: Path) -> Iterator[Any]:
    """A fresh reference store on a temporary SQLite file (closed after the test)."""
    yield from _engine().harness_store(tmp_path)


@pytest.fixture
def fake_provider() -> Iterator[Callable[..., Any]]:
    """``fake_provider(kind="openai-chat", behaviour="conformant", answer=None)`` starts a fake
    LLM provider on a loopback port and returns its server (``.url``, ``.app.deliveries``);
    every server started is stopped after the test."""
    yield from _engine().fake_provider()


@pytest.fixture
def scenario_runner(request: pytest.FixtureRequest) -> Callable[..., RunResult]:
    """``scenario_runner(path_or_scenario, target=None, seed=None)`` runs one scenario and
    returns its result (``.status``, ``.checks``, ``.history``). The target defaults to the
    test's ``harness_target`` marker, then ``--harness-target``, then the embedded store."""
    marker = request.node.get_closest_marker("harness_target")
    default = (marker.args[0] if marker and marker.args
               else request.config.getoption("--harness-target") or "sqlite")
    runner: Callable[..., RunResult] = _engine().scenario_runner(request.config, default)
    return runner
