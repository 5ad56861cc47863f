"""The pytest plugin against an HTTP target it cannot use as configured stops once, with the
plugin's own option names (qa Q30: every scenario item failed with the same traceback, whose fix
named `--tokens-file`, an option the plugin does not have)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.acceptance.conftest import ROOT, QaService


def test_an_http_target_without_tokens_is_one_usage_error(
        scenario_project: pytest.Pytester, qa_service: Callable[..., QaService],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_TOKENS", raising=False)
    service = qa_service()
    result = scenario_project.runpytest_subprocess("--harness-target", service.url)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*failover-harness: --harness-tokens-file: an HTTP target "
                                 "needs a bearer token*", "*fix: pass --harness-tokens-file*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_a_refused_token_is_one_usage_error_and_good_tokens_run_the_scenarios(
        scenario_project: pytest.Pytester, qa_service: Callable[..., QaService],
        tmp_path: Path) -> None:
    service = qa_service("--replicas", "2", "--idle-ms", "1000")
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("not-a-token-of-it: alice\n", "utf-8")
    refused = scenario_project.runpytest_subprocess("--harness-target", service.url,
                                           "--harness-tokens-file", str(wrong))
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*owner alice's token was refused (401*",
                                  "*check --harness-tokens-file*"])
    shipped = len(list((ROOT / "scenarios").glob("*.yaml")))
    good = scenario_project.runpytest_subprocess("--harness-target", service.url,
                                        "--harness-tokens-file", str(service.tokens))
    good.assert_outcomes(passed=shipped)  # two URLs: the replicas scenario runs too
