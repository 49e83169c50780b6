"""The engine's results are bit-identical to the stored fingerprints (``tests/fingerprints.py``).

A failure names each run and part of its Result that moved.  A deliberate
change to the model re-stores them with ``python tests/fingerprints.py --save``
and says in its commit which numbers moved and why.
"""

import json

import pytest

import fingerprints as fp


@pytest.mark.parametrize("label", sorted(fp.RUNS))
def test_engine_results_match_stored_fingerprints(label):
    stored = json.loads(fp.STORE.read_text())
    now = {label: fp.fingerprint_of(label)}
    assert fp.differences({label: stored[label]}, now) == []


def test_fingerprints_see_a_one_ulp_change():
    import models

    scenario, params = fp.RUNS["closed-fair-8"]
    result = models.run(scenario, **params, **fp._LOGS)
    before = fp.fingerprint(result)
    result.workers.loc[3, "cpu_ms"] = float.__add__(result.workers.loc[3, "cpu_ms"], 0.0) * (1 + 2**-52)
    after = fp.fingerprint(result)
    assert [part for part in before if before[part] != after[part]] == ["workers"]
