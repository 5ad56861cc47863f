"""Side effects as provider calls: what an LLM job service's handler does, counted by the
drill's recording fakes while the scenarios run (a profile with ``drill:`` and no
``side_effects:`` counter).

One run of the handler is one call to the primary provider: a job's fallback and hedge calls are
that run's failover (the drill judges their number against ``policy.max_billed_calls``), so the
counter counts the primaries' calls — a duplicate that ran the handler again calls the primary
again, even when every answer names one job. The scenarios' requests carry no drill tag, so
their calls are the fakes' untagged ones; a drill running at the same time tags its own. The
service calls its providers from its own worker, after the create was answered, so a reading
waits until the service has settled: every job the scenarios made has a final status (the
drill's ``observe.statuses``: succeeded or failed) and no untagged call is still open. A reading
that cannot wait that long raises
:class:`~harness.scenarios.targets.side_effects.CounterUnsettled`: the run's side-effect promise
is then unknown, with the reason, never judged on half a count.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from harness.providers.recording import RecordingFake
from harness.scenarios.targets.side_effects import CounterUnsettled
from harness.target.drill_section import DrillSection

#: (owner, job id) → the job's raw status, or None when it could not be read
ReadStatus = Callable[[str, str], str | None]


class ProviderCalls:
    """A side-effect counter reading the primaries' untagged calls once the service settled."""

    def __init__(self, primaries: Sequence[RecordingFake], fakes: Sequence[RecordingFake],
                 drill: DrillSection) -> None:
        self.primaries = list(primaries)  # their calls are counted: one per handler run
        self.fakes = list(fakes)  # every provider: a reading waits until none is called
        self.drill = drill
        self.lock = threading.Lock()
        #: job id → owner: jobs the scenarios made whose final status was not seen yet
        self.pending: dict[str, str] = {}
        self.read_status: ReadStatus | None = None

    def made(self, owner: str, job_id: str) -> None:
        """A create answered job ``job_id``: its provider calls are waited for."""
        with self.lock:
            self.pending.setdefault(job_id, owner)

    @property
    def budget_s(self) -> float:
        """How long one reading waits for the service to settle."""
        t = self.drill.timeouts
        return t.job_s + 2 * t.provider_s + 1.0

    def count(self) -> int:
        """Untagged calls to the primaries so far (handler runs), once every known job is final
        and no untagged call is open (CounterUnsettled if that does not happen in the budget)."""
        deadline = time.monotonic() + self.budget_s
        self._jobs_final(deadline)
        for fake in self.fakes:
            left = max(0.0, deadline - time.monotonic())
            if not fake.wait_settled_tag(None, left):
                raise CounterUnsettled(
                    f"a provider call to {fake.name} was still open {self.budget_s:.1f} s after "
                    "the run: the service may still be calling")
        return sum(1 for fake in self.primaries for r in fake.received() if r.tag is None)

    def _jobs_final(self, deadline: float) -> None:
        statuses = self.drill.observe.statuses if self.drill.observe is not None else None
        if statuses is None or self.read_status is None:
            return
        final = {*statuses.succeeded, *statuses.failed}
        pause = self.drill.observe.poll_s if self.drill.observe is not None else 0.05
        while True:
            with self.lock:
                jobs = list(self.pending.items())
            for job, owner in jobs:
                if self.read_status(owner, job) in final:
                    with self.lock:
                        self.pending.pop(job, None)
            with self.lock:
                left = sorted(self.pending)
            if not left:
                return
            if time.monotonic() >= deadline:
                raise CounterUnsettled(
                    f"job {left[0]}" + (f" and {len(left) - 1} more" if len(left) > 1 else "")
                    + f" had no final status {self.budget_s:.1f} s after the run (final: "
                    f"{', '.join(sorted(final))}): its provider calls may still come")
            time.sleep(pause)  # the service's own worker moves the job: look again
