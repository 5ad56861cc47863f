"""The failover runner reaches a fallback only while the lock file certifies it (rule 10)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from harness.contracts.exchange import Channel
from harness.contracts.fakes import golden_answer
from harness.contracts.workspace import Workspace
from harness.domain import Intent
from harness.failover import FailoverRunner, RunStatus
from harness.providers.clients import client_for
from harness.providers.fake_transport import fake_transport
from harness.store import open_store
from tests.contracts.conftest import provider


def _run(ws: Workspace, tmp: Path, key: str):
    contract = ws.contracts["ticket_triage"]
    golden = next(g for g in contract.goldens if g.id == "fr-facture-tva")
    clients = {
        pid: client_for(cfg, transport=fake_transport(
            cfg.kind, str(cfg.fake_behaviour), answer=golden_answer(contract)
        ))
        for pid, cfg in ws.providers.providers.items()
    }
    request = Channel(ws.providers.providers["primary"], contract, clients["primary"]) \
        .request_for(golden)
    assert not isinstance(request, str)
    store = open_store(f"sqlite:///{tmp / 'jobs.db'}")
    try:
        job = store.create_job("alice", key, Intent("ticket_triage", dict(golden.input))).job
        runner = FailoverRunner(store, "alice", clients=clients, eligibility=ws.eligibility())
        result = asyncio.run(runner.run(job.id, ws.providers.chain_for("ticket_triage"), request))
    finally:
        store.close()
    return result, dict(golden.expected)


def test_a_certified_fallback_takes_over_and_a_stale_one_is_skipped(project, tmp_path) -> None:
    project.write_providers({
        "primary": provider("status:429"),
        "fallback": provider(kind="anthropic-messages"),
    })
    project.cli("certify", "--no-progress")  # the 429 primary is ineligible; the fallback is not
    result, expected = _run(project.workspace(), tmp_path, "click-1")
    assert result.status is RunStatus.SUCCEEDED
    assert [(a.provider, a.state.value) for a in result.attempts] == [
        ("primary", "failed"), ("fallback", "succeeded"),
    ]
    assert result.result == expected

    project.write_providers({
        "primary": provider("status:429"),
        "fallback": provider(kind="anthropic-messages", temperature=0.2),  # not re-certified
    })
    result, _ = _run(project.workspace(), tmp_path, "click-2")
    assert result.status is RunStatus.EXHAUSTED
    assert [a.provider for a in result.attempts] == ["primary"]
    (skipped,) = result.skipped
    assert skipped.provider == "fallback"
    assert skipped.reason.startswith("not eligible for ticket_triage: stale: the provider's "
                                     "configuration changed since it was certified")
