"""Issue 41: the fit on captures it was not written for, each with its truth in a sidecar (tests/captures/).

Generated captures lay a server's background over a model run (models/fitting/background.py, written by
scripts/make_captures.py); published ones hold what an author measured and nothing more.  Every capture is
diagnosed as its sidecar says, with exit code 0 from the command line whatever the answer; the modelled ones
whose sidecar expects a fit get one with ranges, or are listed below as not yet fitted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from models.cli import main
from models.fitting import fit as fitting
from models.fitting.snapshot import read

CAPTURES = Path(__file__).parent / "captures"
PATHS = sorted([*CAPTURES.glob("*.csv"), *(CAPTURES / "published").glob("*.csv")])

# Modelled captures the fit does not fit yet, and why (issue 41's open part): each is still diagnosed right and
# answered with a refusal that names the count; strict, so a capture that starts to fit must leave this list.
NOT_YET_FITTED = {
    "hot_page_busy_instance": "150 other sessions in the instance's sessions setting are charged to the inserts",
    "hot_page_orderline_xevents": "the instance's sessions setting holds other work's sessions",
    "mixed_hot_page_writelog": "the instance's sessions setting holds other work's sessions",
    "hot_page_cpu_queue": "the think time's bias correction leaves the model's range",
    "version_store_40_on_24": "other work's transactions are read as updates",
    "version_store_reads": "the hold's bias correction leaves the model's range",
    "version_store_wide_rows": "the hold's bias correction leaves the model's range",
    "mixed_version_store_page_reads": "the hold's bias correction leaves the model's range",
    "parallel_insert_nesting": "the parallel insert's estimator needs the latch_acquired count",
    "parallel_insert_full_logging": "the parallel insert's estimator needs the latch_acquired count",
}


def truth(path: Path) -> dict:
    return json.loads(path.with_suffix(".truth.json").read_text())


def test_the_corpus_has_twenty_captures_and_published_ones():
    assert len([p for p in PATHS if p.parent == CAPTURES]) >= 20
    assert len([p for p in PATHS if p.parent.name == "published"]) >= 5
    assert all(p.with_suffix(".truth.json").exists() for p in PATHS)


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_every_capture_is_diagnosed_right_with_exit_code_0(path, capsys):
    """The command line prints the diagnosis first and exits 0 for every answer: fitted, refused or not a latch."""
    expected = truth(path)["diagnosis"]
    code = main(["fit", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    first = " ".join(out.split("\nevidence:")[0].split())  # the diagnosis line, unwrapped
    assert first.startswith("diagnosis: ") and any(first[len("diagnosis: "):].startswith(name) for name in expected), \
        (first, expected)
    assert "error:" not in err


@pytest.mark.parametrize("path", [p for p in PATHS if truth(p).get("fit")],
                         ids=[p.stem for p in PATHS if truth(p).get("fit")])
def test_modelled_captures_are_fitted_with_ranges(path):
    if path.stem in NOT_YET_FITTED:
        pytest.xfail(NOT_YET_FITTED[path.stem])
    f = fitting.answer(read(path))
    assert f.scenario == truth(path)["scenario"] and not f.refusal, f.refusal
    fitted = [e for e in f.params.values() if e.basis == "fitted"]
    assert fitted and all(e.low <= e.estimate <= e.high for e in fitted)


@pytest.mark.parametrize("name", sorted(NOT_YET_FITTED))
def test_a_capture_not_yet_fitted_is_refused_with_its_diagnosis_standing(name):
    f = fitting.answer(read(CAPTURES / f"{name}.csv"))
    assert f.refusal and not f.params and f.diagnosis.scenario == truth(CAPTURES / f"{name}.csv")["scenario"]


def test_names_come_from_the_capture():
    """The DBA's index name is what the fit reports, never the model's own table."""
    for path in PATHS:
        names = truth(path).get("names") or {}
        index = names.get("index")
        if not index or path.stem in NOT_YET_FITTED or truth(path).get("scenario") != "last-page-insert":
            continue
        f = fitting.answer(read(path))
        text = json.dumps(f.to_dict())
        assert index in text and "PK_orders" not in text and "latch_models" not in text, path.stem
