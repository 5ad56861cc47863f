"""What the pytest plugin (:mod:`harness.pytest_plugin`) does, imported when a run uses it: the
scenario items, the target check at the session's start, and the fixtures' work."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.domain.errors import HarnessError
from harness.providers.fake import FakeProvider
from harness.scenarios.loader import load_scenario
from harness.scenarios.render import render_run
from harness.scenarios.runfolder import replay_command, write_run
from harness.scenarios.runner import RunResult, run_scenario
from harness.scenarios.targets import open_target
from harness.store import open_store

#: the command line's option names, as the plugin spells them
_PLUGIN_OPTIONS = (("--tokens-file", "--harness-tokens-file"),
                   ("--target-profile", "--harness-target-profile"),
                   ("--target", "--harness-target"))


def check_target(config: pytest.Config, url: str) -> None:
    """Open the target and run its preflight; what is wrong is one usage error."""
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


def harness_store(tmp_path: Path) -> Iterator[Any]:
    """The ``harness_store`` fixture: a reference store on a temporary SQLite file."""
    store = open_store(f"sqlite:///{tmp_path / 'harness-store.db'}")
    yield store
    store.close()


def fake_provider() -> Iterator[Callable[..., Any]]:
    """The ``fake_provider`` fixture: a factory of fake providers, all stopped at its end."""
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


def scenario_runner(config: pytest.Config, default: str) -> Callable[..., RunResult]:
    """The ``scenario_runner`` fixture's function, its target ``default`` unless given."""

    def run(scenario: Any, target: str | None = None, seed: int | None = None) -> RunResult:
        if isinstance(scenario, str | Path):
            scenario = load_scenario(Path(scenario))
        opened = _open_target(config, target or default)
        try:
            return run_scenario(scenario, opened, seed=seed)
        finally:
            opened.close()

    return run
