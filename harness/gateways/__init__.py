"""Gateways as they are deployed: a LiteLLM config as a provider source, certification through
the real gateway (``--via``), failover drills and the export of certified fallback lists.

Submodules are imported where used (``harness.providers.config`` reaches this package while it
is itself being imported):

- :mod:`harness.gateways.litellm_config` reads a LiteLLM ``config.yaml`` with lines;
- :mod:`harness.gateways.source` turns it into providers and chains;
- :mod:`harness.gateways.options` adds ``--contract-map`` / ``--via`` to a command;
- :mod:`harness.gateways.export` writes the certified fallback lists;
- :mod:`harness.gateways.drill` runs the failover drills (on ``providers.recording`` fakes).
"""
