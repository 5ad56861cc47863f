"""A small contract can be decided: the docs' walk-through certifies to a decision; a fixed plan
that cannot decide is said at load, sampled adaptively instead, and every fix command printed
for it carries --adaptive (so that running it verbatim decides)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.contracts.decidable import samples_to_pass

ROOT = Path(__file__).resolve().parents[2]
KEEP = ("de-rechnung.yaml", "de-login-gesperrt.yaml", "en-cancel-legal.yaml")


def walkthrough_settings() -> dict[str, object]:
    text = (ROOT / "docs" / "contracts.md").read_text("utf-8")
    section = text.split("## Walk-through: a small contract that certifies", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block
    settings = yaml.safe_load(block.group(1))["certification"]
    assert isinstance(settings, dict)
    return settings


def small_workspace(tmp: Path, samples: int) -> Path:
    shutil.copy(ROOT / "providers.yaml", tmp / "providers.yaml")
    shutil.copytree(ROOT / "contracts", tmp / "contracts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    contract = tmp / "contracts" / "ticket_triage"
    for golden in (contract / "golden").iterdir():
        if golden.name not in KEEP:
            golden.unlink()
    data = yaml.safe_load((contract / "contract.yaml").read_text("utf-8"))
    data["certification"] = {**walkthrough_settings(), "samples": samples}
    (contract / "contract.yaml").write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    return tmp


def test_the_table_in_the_docs_is_what_the_rules_compute() -> None:
    text = (ROOT / "docs" / "contracts.md").read_text("utf-8")
    rows = re.findall(r"^\| ([\d.]+) \| ([\d.]+) \| (\d+) \| (\d+) \|$", text, re.M)
    assert len(rows) == 5
    for threshold, confidence, fixed, adaptive in rows:
        t, c = float(threshold), float(confidence)
        assert samples_to_pass(t, c, "clopper-pearson") == int(fixed)
        assert samples_to_pass(t, c, "mixture-sprt") == int(adaptive)


def test_the_walkthrough_contract_certifies_to_a_decision(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    settings = walkthrough_settings()
    ws = small_workspace(tmp_path, int(str(settings["samples"])))
    monkeypatch.chdir(ws)
    code = main(["certify", "--report-dir", str(ws / "reports")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "cannot certify" not in out
    assert re.search(r"ELIGIBLE +ticket_triage +openai-primary .*\[30 calls, k=10\]", out), out


def test_an_undecidable_fixed_plan_is_said_at_load_and_sampled_adaptively(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    ws = small_workspace(tmp_path, 3)
    monkeypatch.chdir(ws)
    code = main(["certify", "--report-dir", str(ws / "reports")])
    out = capsys.readouterr().out
    assert ("contract 'ticket_triage': its fixed plan (3 golden inputs × samples: 3 = 9) cannot "
            "certify at threshold 0.9 and confidence 0.95 even if every answer passes; it needs "
            "29 samples (samples: 10); certify samples adaptively (--adaptive) instead") in out
    assert code == 0, out  # decided: adaptive sampling reached a verdict
    assert "UNDECIDED" not in out
    # the gate's fix for a pair never certified names the command that would decide
    (ws / "providers.lock.json").unlink()
    code = main(["gate", "--report-dir", str(ws / "reports")])
    out = capsys.readouterr().out
    assert code == 3 and "failover-harness certify --adaptive --providers" in out, out
