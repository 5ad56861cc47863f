"""The user's service as the user describes it: the target profile.

One room that the scenario engine, the drill and explore all read: the API operations and their
fields, owners, fingerprint and replay rules, the lease, side-effect counters, fault triggers and
the ``drill:`` section (``model.py``, ``drill_section.py``, ``drill_profile.py``), with the errors
that name the profile's line and the fix (``errors.py``), and how other layers compare bodies
(``fingerprints.py``). Pure description, except ``bounded.py``: the one way every room reads
the service (a deadline per request, a size limit per answer), and ``ids.py``: how an id it
answered goes into a URL.
"""
