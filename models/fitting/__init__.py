"""Reading a server's snapshot, fitting a scenario to it, and asking what a change would do.

Generic code: every fact about a scenario (its diagnosis rule, estimator, what-if changes) is asked of
the scenario's own object in :mod:`models.scenarios`.
"""
