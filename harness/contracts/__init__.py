"""The contract verifier: certify that a provider meets a contract, and gate failover on it.

::

    contracts/<name>/contract.yaml ──load_contract──▶ Contract
    providers.yaml + Contract ──certify()──▶ CertificationRecord ──▶ providers.lock.json
    providers.lock.json ──LockFileEligibility / Workspace.gate()──▶ Standing (rule 10)

Modules: ``loader`` / ``model`` / ``jsonpos`` (contracts, errors at their lines), ``render``
and ``tokenizers`` (prompts), ``outputs`` (judging one answer), ``checks`` (schema,
tokenization, round trip), ``stats`` (three-state verdicts: Clopper–Pearson bounds, the mixture
SPRT of ``--adaptive``), ``exchange`` and ``cassettes`` (calls through the production client
and failover runner, recorded or replayed), ``certifier`` (orchestration), ``records`` /
``drift`` / ``lockfile`` (the lock file, per-input evidence, what changed), ``standing`` /
``eligibility`` / ``workspace`` (the gate).
"""

from harness.contracts.certifier import CertificationRun, Target, certify, plan
from harness.contracts.eligibility import LockFileEligibility
from harness.contracts.loader import load_contract, load_contracts
from harness.contracts.lockfile import LockFile, lock_path_for, read_lock
from harness.contracts.model import Contract, Golden
from harness.contracts.records import (
    CertificationRecord,
    CheckResult,
    Evidence,
    InputTally,
    Sampling,
)
from harness.contracts.standing import Standing, State
from harness.contracts.stats import RateVerdict
from harness.contracts.tokenizers import TokenizerUnavailable, load_tokenizer
from harness.contracts.workspace import Workspace, workspace_for

__all__ = [
    "CertificationRecord",
    "CertificationRun",
    "CheckResult",
    "Contract",
    "Evidence",
    "Golden",
    "InputTally",
    "LockFile",
    "LockFileEligibility",
    "RateVerdict",
    "Sampling",
    "Standing",
    "State",
    "Target",
    "TokenizerUnavailable",
    "Workspace",
    "certify",
    "load_contract",
    "load_contracts",
    "load_tokenizer",
    "lock_path_for",
    "plan",
    "read_lock",
    "workspace_for",
]
