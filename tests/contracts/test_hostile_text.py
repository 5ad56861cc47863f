"""Nothing a provider returns can break the tool: hostile answers through certify, check and
every report renderer (markup, terminal escapes, NUL, lone surrogates, 1 MB, deep nesting)."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.cli import main
from harness.contracts import exchange
from tests.contracts.conftest import Project, provider

ROOT = Path(__file__).resolve().parents[2]
VALID = {"category": "billing", "priority": "p3", "language": "en", "sentiment": "neutral",
         "summary": "s", "tags": [], "confidence": 0.5, "needs_human": False}
DEPTH = 100_000

# name -> the exact text the model answers (an OpenAI message's content)
HOSTILE: dict[str, str] = {
    "markup-keys": json.dumps({**VALID, "[/b]": "x", "[bold red]": "[/]", "^[/a-z]{2}$": 1}),
    "markup-prose": "Sure! [/b][link=file:///etc/passwd]click[/link] :smile: [a-z] \\[x] \\",
    "markup-values": json.dumps({**VALID, "category": "[/b]", "tags": ["[red]", "[/]"]}),
    "ansi-raw": '{"category": "\x1b[31mbilling\x1b[0m\x1b[2J\x1b]8;;http://evil\x07x\x1b]8;;\x07"}',
    "ansi-escaped": json.dumps({**VALID, "summary": "\x1b[2J\x1b[H\x1b[31mred", "\x1b[1m": 1}),
    "nul": json.dumps({**VALID, "summary": "a\x00b", "\x00": 0}) + "\x00",
    "lone-surrogates": '{"\\ud800": "\\udfff", "summary": "\\udc80\\ud83d"}',
    "control-bidi": json.dumps({**VALID, "summary": "\u202eevil\r\x08\x7f\x9b"}),
    "one-megabyte": json.dumps({**VALID, "summary": "[/b]\x1b" * 250_000}),
    "deep-array": "[" * DEPTH + "]" * DEPTH,
    "deep-object": '{"a":' * DEPTH + "1" + "}" * DEPTH,
    "deep-in-value": '{"summary": ' + "[" * DEPTH + "]" * DEPTH + "}",
}


class HostileTransport(httpx.AsyncBaseTransport):
    """An OpenAI-compatible endpoint whose model answers ``HOSTILE[<model name>]``."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(await request.aread())
        content = HOSTILE[body["model"].removeprefix("hostile-")]
        reply = {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        # ensure_ascii: lone surrogates travel as \ud800 escapes, as a real API would send them
        return httpx.Response(200, content=json.dumps(reply).encode(),
                              headers={"content-type": "application/json"})


@pytest.fixture
def hostile(monkeypatch: pytest.MonkeyPatch) -> None:
    real = exchange.fake_transport

    def patched(kind: str, behaviour: str, **kw: Any) -> Any:
        return HostileTransport() if behaviour == "refusal" else real(kind, behaviour, **kw)

    monkeypatch.setattr(exchange, "fake_transport", patched)


def _providers(project: Project, names: list[str]) -> None:
    contract = project.contract / "contract.yaml"  # 40 samples a provider: enough to decide
    contract.write_text(contract.read_text("utf-8").replace("samples: 3", "samples: 2"), "utf-8")
    providers = {"primary": provider()}
    for name in names:  # fake://refusal stands for "hostile" (patched above)
        providers[name] = {**provider("refusal"), "model": f"hostile-{name}"}
    project.write_providers(providers)


def _assert_printable(text: str) -> None:
    text.encode("utf-8")  # no lone surrogate reached the output
    for bad in ("\x1b", "\x00", "\x07", "\u202e", "\x9b"):
        assert bad not in text, repr(bad)


def test_certify_reports_every_hostile_answer_and_does_not_crash(
    project: Project, hostile: None, capsys: pytest.CaptureFixture[str]
) -> None:
    _providers(project, list(HOSTILE))
    code = project.cli("certify", "--no-progress")
    out, err = capsys.readouterr()
    assert code == 1, err  # ineligible auto links, reported — not exit 70
    assert "internal error" not in err
    _assert_printable(out + err)
    lock = json.loads(project.lock_path.read_text("utf-8"))
    verdicts = {r["provider"]: r["verdict"] for r in lock["certifications"]}
    assert verdicts == {"primary": "eligible", **dict.fromkeys(HOSTILE, "ineligible")}
    reasons = {  # the first failed check's first piece of evidence
        r["provider"]: next(c for c in r["checks"] if c["decision"] == "fail")["evidence"][0]
        for r in lock["certifications"] if r["provider"] != "primary"
    }
    assert "hallucinated keys '[/b]', '[bold red]', '^[/a-z]{2}$'" in \
        reasons["markup-keys"]["reason"]
    assert reasons["markup-prose"]["reason"] == "the answer is prose, not JSON"
    assert "[/b][link=file:///etc/passwd]" in reasons["markup-prose"]["excerpt"]
    assert "\\x1b[31m" in reasons["ansi-raw"]["excerpt"]  # shown, neutralised
    assert len(reasons["one-megabyte"]["excerpt"]) <= 160
    assert len(reasons["one-megabyte"]["reason"]) < 400  # the 1 MB value, quoted, is cut
    assert "differs from the golden expectation" in reasons["control-bidi"]["reason"]
    for name in ("deep-array", "deep-object", "deep-in-value"):
        assert reasons[name]["reason"], name
    # The printed table and the Markdown report show the markup literally.
    assert "'[/b]'" in out and "[bold red]" in out
    report = (project.root / "reports" / "latest" / "summary.md").read_text("utf-8")
    _assert_printable(report)
    assert "[/b]" in report


def test_check_and_its_report_folder_survive_hostile_answers(
    tmp_path: Path, hostile: None, capsys: pytest.CaptureFixture[str]
) -> None:
    project = Project(tmp_path)
    _providers(project, ["markup-keys", "ansi-escaped", "lone-surrogates", "one-megabyte",
                         "deep-object", "nul"])
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    shutil.copy(ROOT / "scenarios" / "double_click.yaml", scenarios)
    code = main(["check", "--providers", str(project.providers_path), "--scenarios",
                 str(scenarios), "--report-dir", str(tmp_path / "reports")])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert "internal error" not in err
    _assert_printable(out + err)
    folder = tmp_path / "reports" / "latest"
    for name in ("results.json", "junit.xml", "summary.md", "index.html"):
        text = (folder / name).read_text("utf-8")
        _assert_printable(text)
    json.loads((folder / "results.json").read_text("utf-8"))
    ET.fromstring((folder / "junit.xml").read_bytes())  # well-formed XML
    html = (folder / "index.html").read_text("utf-8")
    assert "[/b]" in html and "<script" not in html


# -- every report renderer, fed raw hostile strings (not pre-cleaned by the certifier) ----------

RAW = [
    "[/b]", "[bold red]x", "^[/a-z]{2}$", "\x1b[31mred\x1b[0m\x1b[2J", "nul\x00byte", "\ud800lone",
    "<script>alert(1)</script>", "]]>", "&amp; &", "\u202eevil", "a|b\nc`d", "\x0c\x0b\x08",
    "x" * 1_000_000,
]


def _raw_report() -> Any:
    from harness.reports import (
        CertCheck,
        Certification,
        Check,
        Evidence,
        GateProblem,
        GateVerdict,
        Results,
        ScenarioRun,
        Violation,
    )

    text = "".join(RAW)
    evidence = tuple(Evidence(f"in-{i}{s[:40]}", s, s) for i, s in enumerate(RAW))
    cert = Certification(
        provider="p" + RAW[0], contract="c" + RAW[3], verdict="ineligible", outcome="fail",
        model=text, kind="openai-chat", mode="live", failover="auto", why=text,
        checks=(CertCheck("schema", "broken", text, evidence),
                CertCheck("tokenization", "held", RAW[4])),
    )
    scenario = ScenarioRun(
        scenario="s" + RAW[1], target="http://x" + RAW[3], verdict="broken", outcome="fail",
        description=text,
        checks=(Check("one_winner", RAW[2], "broken",
                      tuple(Violation(v, "", (1, 2), (v,)) for v in RAW)),),
        reason=text, replay_command="failover-harness replay " + RAW[4],
    )
    gate = GateVerdict("fail", "fail", 1, (GateProblem("p" + RAW[0], "c", "failed", text,
                                                       RAW[6]),))
    return Results(
        command="check", verdict="fail", exit_code=1, started_at="2026-01-01T00:00:00.000000Z",
        finished_at="2026-01-01T00:00:01.000000Z", harness_version="0",
        events=(scenario, cert, gate), notes=(RAW[3],),
    )


def _renderers() -> dict[str, Any]:
    from harness.reports import render_html, render_json, render_junit, render_markdown

    return {"json": render_json, "junit": render_junit, "markdown": render_markdown,
            "html": render_html}


@pytest.mark.parametrize("name", ["json", "junit", "markdown", "html"])
def test_every_report_renderer_survives_raw_hostile_strings(name: str) -> None:
    rendered = _renderers()[name](_raw_report())
    data = rendered.encode("utf-8")  # what the writer does: lone surrogates must not reach it
    if name == "json":  # data for machines: escapes are data, but it must encode and parse
        json.loads(data)
        return
    _assert_printable(rendered)  # read by people (a terminal, a browser, a CI page)
    if name == "junit":
        ET.fromstring(data)
    if name == "html":
        assert "<script>alert" not in rendered and "[/b]" in rendered
