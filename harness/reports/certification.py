"""The certification and gate events, re-exported from :mod:`harness.contracts.events` (their
room) until every branch imports them from there."""

from __future__ import annotations

from harness.contracts.events import CertCheck as CertCheck
from harness.contracts.events import Certification as Certification
from harness.contracts.events import Drift as Drift
from harness.contracts.events import Evidence as Evidence
from harness.contracts.events import GateProblem as GateProblem
from harness.contracts.events import GateVerdict as GateVerdict
from harness.contracts.events import Sampling as Sampling
from harness.contracts.events import Statistic as Statistic
