"""What a recording fake keeps of each provider call (:class:`Received`), and whether the
provider would bill it (a real provider bills a request it accepted, whether or not the caller is
still there when the answer is ready):

==========  ==========================================================  ======  =========
outcome     what happened                                                billed  delivered
==========  ==========================================================  ======  =========
answered    the answer was sent to a caller still connected              yes     yes
late        the caller left before the (slow) answer was ready           yes     no
abandoned   a hung request whose caller left                             yes     no
reset       read, then the connection was reset                          yes     no
cut         a stream cut after its first bytes                           yes     partly
released    a hung request the drill closed (its caller never left)      yes     no
refused     an error status (429, 529; 400: malformed): none generated  no      —
in_flight   still open                                                   yes     —
==========  ==========================================================  ======  =========

A signed answer (:func:`signature`) says whose it is, found again in a job's result by
:data:`SIGNATURE`. Pure data: the fake that fills the records is
:class:`harness.providers.recording.RecordingFake`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from harness.providers.holds import Freed

BILLED = frozenset({"answered", "late", "abandoned", "reset", "cut", "released", "in_flight"})
SIGNATURE = re.compile(r"call ([A-Za-z0-9_.:-]+)#(\d+)")  # see signature()


def signature(name: str, seq: int, tag: str | None) -> str:
    """The text a signed fake answers: whose answer it is, found again by :data:`SIGNATURE`."""
    return f"answered by {name} (call {name}#{seq})" + (f" for {tag}" if tag else "")


@dataclass
class Received:
    """One request as the provider saw it."""

    seq: int
    at: float  # seconds since the fake started
    path: str
    behaviour: str
    stream: bool
    headers: dict[str, str]
    body: Any  # the parsed JSON body (None if it was not JSON)
    tag: str | None  # the drill request it belongs to, if any
    outcome: str = "in_flight"
    status: int | None = None
    ended_at: float | None = None
    held: bool = False  # its answer waited until the drill let it go
    freed: Freed | None = None  # how a held answer's wait ended (drill, backstop, left)
    freed_at: float | None = None  # when (the fake's clock)
    #: it waited for a look at the job after an earlier answer of its tag: how that ended
    waited: Freed | None = None
    prompt: str = ""  # what it asked, as a key (prompt_key): a retry or a re-run asks the same

    @property
    def billed(self) -> bool:
        return self.outcome in BILLED

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "billed": self.billed}
