"""CLI fixtures: a loopback service answering every request the same (shared with the
acceptance tests)."""

from tests.acceptance.conftest import answering

__all__ = ["answering"]
