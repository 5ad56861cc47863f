"""The drill room: the user's service seen from its providers (docs/drill.md).

``profile`` reads a profile's ``drill:`` section; ``engine`` serves the providers as recording
fakes, submits tagged intents and watches them; ``judge`` decides each promise from the
``evidence``; ``summary`` turns verdicts into the ``events`` the reports render.
"""
