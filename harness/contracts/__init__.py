r"""The contract verifier: certify that a provider meets a contract, and gate failover on it.

::

    contracts/<name>/contract.yaml ──load_contract──▶ Contract
    providers.yaml + Contract ──certify()──▶ CertificationRecord ──▶ providers.lock.json
    providers.lock.json ──LockFileEligibility / Workspace.gate()──▶ Standing (rule 10)

Modules: ``loader`` / ``model`` / ``jsonpos`` (contracts, errors at their lines), ``render``
and ``tokenizers`` (prompts), ``outputs`` (judging one answer), ``checks`` (schema,
tokenization, round trip), ``stats`` (three-state verdicts: Clopper–Pearson bounds, the mixture
SPRT of ``--adaptive``), ``exchange`` and ``cassettes`` (calls through the production client
and failover runner, recorded or replayed), ``certifier`` (orchestration: a ``Certification``
of the planned ``Pairing`` objects), ``judgement`` (the checks and verdict of one pairing),
``records`` / ``drift`` / ``lockfile`` (the lock file, per-input evidence, what changed),
``standing`` /
``eligibility`` / ``workspace`` (the gate).
"""

from typing import Any as _Any

from harness.domain import lazy as _lazy

# imported lazily, so that importing one module of the room (its events, for the reports)
# does not run the whole engine
_EXPORTS = {
    "CertificationRecord": "records",
    "CertificationRun": "certifier",
    "ContractCheck": "records",
    "Contract": "model",
    "Evidence": "records",
    "Golden": "model",
    "InputTally": "records",
    "LockFile": "lockfile",
    "LockFileEligibility": "eligibility",
    "RateVerdict": "stats",
    "Sampling": "records",
    "Pairing": "judgement",
    "Standing": "standing",
    "State": "standing",
    "TokenizerUnavailable": "tokenizers",
    "Workspace": "workspace",
    "certify": "certifier",
    "golden_answer": "fakes",
    "load_contract": "loader",
    "load_contracts": "loader",
    "load_tokenizer": "tokenizers",
    "lock_path_for": "lockfile",
    "plan": "certifier",
    "read_lock": "lockfile",
    "workspace_for": "workspace",
}

__all__ = [
    "CertificationRecord",
    "CertificationRun",
    "Contract",
    "ContractCheck",
    "Evidence",
    "Golden",
    "InputTally",
    "LockFile",
    "LockFileEligibility",
    "Pairing",
    "RateVerdict",
    "Sampling",
    "Standing",
    "State",
    "TokenizerUnavailable",
    "Workspace",
    "certify",
    "golden_answer",
    "load_contract",
    "load_contracts",
    "load_tokenizer",
    "lock_path_for",
    "plan",
    "read_lock",
    "workspace_for",
]


def __getattr__(name: str) -> _Any:
    return _lazy.load(__name__, _EXPORTS, globals(), name)


def __dir__() -> list[str]:
    return _lazy.names(_EXPORTS, globals())
