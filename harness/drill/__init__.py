"""The drill room: the user's service seen from its providers (docs/drill.md).

``entry`` is the entry point (frozen :class:`~harness.drill.entry.DrillSettings` in, events and
a verdict out); ``engine`` serves the providers as recording fakes and runs every intent in one
round; ``intent`` drives one intent (its submits, its held answers, its watch and its settle);
``client`` makes the drill's requests to the service (submits, looks at a job); ``judge``
decides each promise from the ``evidence``, ``causes`` says why an intent could not be judged;
``again`` picks the trials the load left without evidence, which the engine drills again;
``summary`` turns verdicts into the
``events`` the reports render; ``beside`` runs the drills beside ``check --target``'s scenarios.
The profile's ``drill:`` section is read in :mod:`harness.target`.
"""
