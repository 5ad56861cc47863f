"""The providers of a drill profile, served as recording fakes on the profile's ports: one
fake per provider, all on the drill's clock, sharing one :class:`AfterAnswer` (an answer at any
of them makes a later call of the same intent wait for a look at the job)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from harness.domain.errors import ConfigError
from harness.providers.holds import AfterAnswer
from harness.providers.recording import RecordingFake
from harness.target.drill_profile import DrillProfile, Upstream


@dataclass
class Served:
    """A provider of the profile and the fake answering in its place."""

    upstream: Upstream
    fake: RecordingFake
    server: Any = None

    @property
    def url(self) -> str:
        return f"http://{self.upstream.host}:{self.upstream.port}"



@contextmanager
def serving(profile: DrillProfile, upstreams: Sequence[Upstream], epoch: float
            ) -> Iterator[list[Served]]:
    """The fakes, listening on the profile's ports (a busy port: ConfigError at its line)."""
    from harness.providers.fake_server import FakeServer  # optional extra: serve (uvicorn)

    # control=False: the drill scripts its fakes in process; no request to them can change a
    # script, a log or a verdict (the control plane is not the data plane)
    # one AfterAnswer for them all: an answer at the fallback holds a re-run's call at the primary
    after = AfterAnswer()
    served = [Served(u, RecordingFake(u.kind, name=u.name, signed=True, epoch=epoch,
                                      control=False, after_answer=after))
              for u in upstreams]
    started: list[Any] = []
    try:
        for i, item in enumerate(served):
            try:
                item.server = FakeServer(item.fake, host=item.upstream.host,
                                         port=item.upstream.port)
            except ConfigError as exc:
                raise profile.error(f"{item.upstream.name}'s port {item.upstream.port} is busy: "
                                    f"{exc.args[0].splitlines()[0]}",
                                    ("drill", "providers", i, "port"),
                                    "stop what listens there, or give the provider a free "
                                    "port (${VAR} in the profile, or --port NAME=PORT)") from None
            item.server.start()
            started.append(item.server)
        yield served
    finally:
        for item in served:
            for tag in {r.tag for r in item.fake.received() if r.tag}:
                item.fake.release(tag)
        for server in started:
            server.stopping()  # all at once: each takes a tick of its loop to notice
        for server in started:
            server.stop()
