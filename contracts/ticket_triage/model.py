"""Business model of the ticket_triage contract: validate a triage, then route it.

Loaded by failover-harness from this folder (business.model / business.function in
contract.yaml). Plain pydantic; no harness imports, so your service can use the same file.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SUPPORTED_LANGUAGES = {"en", "de", "es", "fr", "it", "ja", "nl", "pl", "pt", "zh"}

QUEUES = {
    "billing": "finance",
    "bug": "engineering",
    "account_access": "identity",
    "feature_request": "product",
    "shipping": "logistics",
    "other": "general",
}
SLA_HOURS = {"p1": 1, "p2": 4, "p3": 24, "p4": 72}


class TicketTriage(BaseModel):
    """One triaged ticket, as the model must return it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    category: Literal["billing", "bug", "account_access", "feature_request", "shipping", "other"]
    priority: Literal["p1", "p2", "p3", "p4"]
    language: str = Field(pattern=r"^[a-z]{2}$")
    sentiment: Literal["negative", "neutral", "positive"]
    summary: str = Field(min_length=1, max_length=200)
    tags: list[str] = Field(max_length=5)
    confidence: float = Field(ge=0, le=1)
    needs_human: bool

    @model_validator(mode="after")
    def _consistent(self) -> TicketTriage:
        if self.language not in SUPPORTED_LANGUAGES:
            raise ValueError(f"language {self.language!r} has no support team")
        if not self.summary.strip():
            raise ValueError("summary is blank")
        if self.confidence < 0.5 and not self.needs_human:
            raise ValueError("a triage with confidence below 0.5 must go to a human")
        return self


def route(triage: TicketTriage) -> dict[str, object]:
    """Where the ticket goes and how fast it must be answered."""
    queue = QUEUES[triage.category]
    if triage.language != "en":
        queue = f"{queue}-{triage.language}"
    return {
        "queue": queue,
        "sla_hours": SLA_HOURS[triage.priority],
        "escalate": triage.needs_human or triage.priority == "p1",
        "language": triage.language,
        "tags": sorted(set(triage.tags)),
        "summary": triage.summary,
        "confidence": triage.confidence,
    }
