"""Gateways as they are deployed: a LiteLLM or Portkey config as a provider source,
certification through the real gateway (``--via``), failover drills and the export of certified
fallback lists. This room may import ``providers`` and ``contracts``; they never import it.

- :mod:`harness.gateways.sources` tells the sources apart and opens a command's workspace;
- :mod:`harness.gateways.litellm_config` reads a LiteLLM ``config.yaml`` with lines;
- :mod:`harness.gateways.source` turns it into providers and chains
  (:mod:`harness.gateways.litellm_origins`: where each came from);
- :mod:`harness.gateways.portkey_config` reads a Portkey config with lines;
  :mod:`harness.gateways.portkey_source` turns it into providers and a chain;
- :mod:`harness.gateways.audit` compares what the provider behind a gateway received;
- :mod:`harness.gateways.options` holds a providers source and its gateway options as settings;
- :mod:`harness.gateways.export` writes the certified fallback lists;
- :mod:`harness.gateways.drill_section` fills in a drill profile from a gateway config (the
  drill engine, :mod:`harness.drill`, runs it).
"""
