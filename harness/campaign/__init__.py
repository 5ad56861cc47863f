"""The jobs that compose engines over a project: ``check`` (scenarios, the drill, certification
and the gate in one run), ``certify`` and ``gate`` (over any providers source, gateways
included). Each is an entry point (:mod:`harness.domain.stream`): frozen settings in, a stream
of typed events and a verdict out; the commands only parse, build the settings and play it."""
