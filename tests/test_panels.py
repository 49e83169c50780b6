"""Every control of every chapter's live panel changes what the panel shows, over the range the chapter gives
it, and no position of a control is one the panel then refuses."""

from __future__ import annotations

import json
import math
from typing import Any

import ipywidgets as w
import pytest

from lab_session import chapters_with_panels, panel_cells

CHAPTERS = chapters_with_panels()


def build_panel(chapter) -> Any:
    """The chapter's panel as its notebook builds it (import cell, then the panel cell), runs disabled."""
    setup, panel = panel_cells(chapter)
    namespace: dict[str, Any] = {}
    exec("".join(setup["source"]), namespace)  # noqa: S102 - the book's own notebook cells
    box = eval("".join(panel["source"]), namespace)  # noqa: S307
    p = box.panel
    p.slow_s = math.inf  # every position runs, however long (the walk wants the output, not the Run button)
    return p


def positions(control: w.ValueWidget) -> list[Any]:
    """The values a reader can reach: every option of a list, the ends of a slider."""
    if isinstance(control, (w.Dropdown, w.SelectionSlider, w.ToggleButtons, w.RadioButtons)):
        return [value for _label, value in control.options] if isinstance(control.options[0], tuple) \
            else list(control.options)
    if isinstance(control, w.FloatLogSlider):
        return [control.base ** control.min, control.base ** control.max]
    return [control.min, control.max]


def shown(p: Any) -> str:
    """Everything the panel shows after a run: headline, charts' data and specs, tables."""
    return json.dumps([p.summary.value, p.chart_view.charts, [o["data"]["text/html"] for o in p.output.outputs]],
                      sort_keys=True, default=str)


@pytest.fixture(scope="module", params=CHAPTERS, ids=[c.stem for c in CHAPTERS])
def panel(request) -> Any:
    return build_panel(request.param)


def test_every_control_changes_the_output_and_is_never_refused(panel) -> None:
    at_default = shown(panel)
    dead, refused = [], []
    for name, control in panel.controls.items():
        default = control.value
        changed = False
        for value in positions(control):
            if value == default:
                continue
            control.value = value  # runs the model at once, as a reader's change does
            if panel.last_error:
                refused.append(f"{name}={value!r}: {panel.last_error}")
            changed |= shown(panel) != at_default
        control.value = default
        if not changed:
            dead.append(name)
    assert not refused, f"{panel.scenario}: positions the panel refuses: {refused}"
    assert not dead, f"{panel.scenario}: controls that change nothing over their range: {dead}"
    assert shown(panel) == at_default  # back at the defaults, the same run


def test_ranges_suit_the_chapter(panel) -> None:
    """No slider spans the whole catalogue where the chapter fixes a limit: MAXDOP stays within the schedulers."""
    values = panel.values()
    if "maxdop" in panel.controls:
        assert max(positions(panel.controls["maxdop"])) <= values["schedulers"]
    for name, control in panel.controls.items():
        p = panel.spec.param(name)
        if p.kind != "choice" and not isinstance(control, w.SelectionSlider):
            low, high = min(positions(control)), max(positions(control))
            assert (low, high) != (p.low, p.high), f"{name}: the panel spans the whole catalogue {p.allowed()}"
