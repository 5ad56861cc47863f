"""The optional parts of failover-harness (pip extras), and the error that names the one to install.

The base install is what CI's ``gate`` and ``certify`` need (and ``check``, ``scenarios``,
``replay`` on SQLite, the reports). The rest is optional::

    [serve]     failover-harness serve, fake-provider       fastapi, uvicorn
    [explore]   explore --choices hypothesis (and the        hypothesis
                Hypothesis shrinking pass: skipped without it)
    [hf]        hf:/path/tokenizer.json tokenizers           tokenizers
    [postgres]  postgresql:// stores, targets and explore    psycopg, psycopg-pool
    [examples]  the drill examples (examples/drill/*.py;     openai, anthropic
                they name it themselves: not the harness's)

A missing one is a :class:`~harness.domain.errors.MissingExtra` (exit 2) that says which extra
to install, whether it is raised where the import happens (:func:`require`) or found by the CLI
in a ``ModuleNotFoundError`` (:func:`missing_extra`), as httpx does for its ``[cli]`` extra.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from harness.domain.errors import MissingExtra

# top-level module -> (extra, what needs it)
MODULES: dict[str, tuple[str, str]] = {
    "fastapi": ("serve", "the HTTP service (failover-harness serve)"),
    "starlette": ("serve", "the HTTP service (failover-harness serve)"),
    "uvicorn": ("serve", "serving HTTP (failover-harness serve, fake-provider)"),
    "hypothesis": ("explore", "Hypothesis-driven exploration and shrinking"),
    "tokenizers": ("hf", "a Hugging Face tokenizer (hf:…/tokenizer.json)"),
    "psycopg": ("postgres", "PostgreSQL"),
    "psycopg_pool": ("postgres", "PostgreSQL"),
}

EXTRAS: dict[str, tuple[str, ...]] = {}
for _module, (_extra, _) in MODULES.items():
    EXTRAS.setdefault(_extra, ())
    EXTRAS[_extra] += (_module,)


def missing_extra(error: ImportError) -> MissingExtra | None:
    """The :class:`MissingExtra` an ``ImportError`` means, or None if it is not about an extra."""
    if isinstance(error, MissingExtra):
        return error
    name = (getattr(error, "name", None) or "").split(".")[0]
    if name not in MODULES:
        return None
    extra, purpose = MODULES[name]
    return MissingExtra(extra, module=name, purpose=purpose)


def require(module: str) -> ModuleType:
    """Import ``module`` (one of :data:`MODULES` or below), or raise :class:`MissingExtra`."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        found = missing_extra(exc)
        if found is None:
            raise
        raise found from None
