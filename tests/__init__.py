"""The test suite. Importing it first (pytest does, before any conftest) keeps compiled bytecode
out of the checkout where the environment forbids writing it beside the sources
(tests/_bytecode.py)."""

from tests import _bytecode

_bytecode.use_cache()
