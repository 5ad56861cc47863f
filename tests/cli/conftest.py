"""CLI fixtures: a loopback service answering every request the same (shared with the
acceptance tests); ``workspace`` (a copy of the shipped workspace) is in tests/conftest.py."""

from tests.acceptance.conftest import answering

__all__ = ["answering"]
