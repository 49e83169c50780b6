"""How long a live panel takes to answer a control, measured in JupyterLab as a reader uses it.

For each chapter's panel: a scratch notebook with the chapter's import cell and its panel cell runs in
JupyterLab (headless Chromium); then a slider is nudged one step and back, again and again, and each
update is timed in the page from the key press to the moment the new charts are drawn and the status line
reports the update. The first two updates warm up (numba dispatch, the front end's Vega); the rest count.

    python benchmarks/panels.py [--changes N] [--chapter 03]

Prints, per panel, the browser's figure (min, median, max in ms) beside the kernel's own (the status
line's "updated in"). Target: the median at most 100 ms at the chapter's default settings.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from lab_session import LabSession, chapters_with_panels, panel_cells  # noqa: E402

TARGET_MS = 100.0
WARMUP = 2

# Arm a timer in the page: it starts at the next key press (or change event) and resolves once the panel's
# chart view has drawn the new update (models/chart_view.js counts them in data-drawn) and the status line
# reports the finished update (the tables come before it).
_ARM = """() => {
  const root = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output .widget-vbox');
  const status = [...root.querySelectorAll('.widget-html')].find(e => /^(updated in|running)/.test(e.textContent));
  const view = root.querySelector('.latch-charts-view');
  const before = Number(view.dataset.drawn);
  window.__panelUpdate = new Promise(resolve => {
    let t0 = null;
    const start = () => { if (t0 === null) t0 = performance.now(); };
    document.addEventListener('keydown', start, {capture: true, once: true});
    document.addEventListener('change', start, {capture: true, once: true});
    const check = () => {
      const text = status ? status.textContent : '';
      if (t0 !== null && Number(view.dataset.drawn) > before && text.startsWith('updated in')) {
        obs.disconnect();
        resolve({ms: performance.now() - t0, status: text,
                 how: [...view.children].map(d => d.dataset.update).join('+')});
      }
    };
    const obs = new MutationObserver(check);
    obs.observe(root, {subtree: true, childList: true, characterData: true, attributes: true});
    setTimeout(() => { obs.disconnect(); resolve({ms: null, status: status ? status.textContent : 'no status'}); },
               20000);
  });
  return view.querySelectorAll('.vega-embed').length;
}"""


def panel_notebook(chapter: Path) -> dict:
    """The chapter's import cell and its panel cell, as a two-cell notebook."""
    nb = json.loads(chapter.read_text(encoding="utf-8"))
    cells = [dict(c, outputs=[], execution_count=None) for c in panel_cells(chapter)]
    return dict(nb, cells=cells)


def measure(lab: LabSession, name: str, changes: int, verbose: bool = False) -> tuple[list[float], list[float]]:
    """Browser and kernel update times (ms) over ``changes`` slider steps, after the warm-up."""
    page = lab.open(name)
    lab.run_all(page, timeout_s=180)
    page.wait_for_function("() => { const v = document.querySelector('.latch-charts-view');"
                           " return v && Number(v.dataset.drawn) >= 1; }", timeout=120_000)
    handle = page.locator(".jp-OutputArea-output .widget-vbox .noUi-handle").first
    browser, kernel = [], []
    for k in range(WARMUP + changes):
        charts = page.evaluate(_ARM)
        if charts == 0:
            raise RuntimeError(f"{name}: the panel shows no chart")
        handle.focus()
        page.keyboard.press("ArrowRight" if k % 2 == 0 else "ArrowLeft")
        done = page.evaluate("window.__panelUpdate")
        if done["ms"] is None:
            raise RuntimeError(f"{name}: no update within 20 s of the key press (status: {done['status']!r})")
        if k >= WARMUP and verbose:
            print(f"  {done['ms']:.0f} ms, charts redrawn by {done.get('how')}", flush=True)
        if k >= WARMUP:
            browser.append(done["ms"])
            kernel.append(float(re.search(r"updated in ([\d.]+) ms", done["status"]).group(1)))
    page.close()
    return browser, kernel


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=8, help="timed updates per panel (default 8)")
    parser.add_argument("--chapter", default="", help="only chapters whose file name starts with this")
    parser.add_argument("--verbose", action="store_true", help="print each update and how its charts were redrawn")
    args = parser.parse_args(argv)
    chapters = [p for p in chapters_with_panels() if p.name.startswith(args.chapter)]
    print(f"panel update, control change to new charts on screen, in JupyterLab ({args.changes} updates "
          f"after {WARMUP} warm-up; target median <= {TARGET_MS:.0f} ms)")
    print(f"{'panel':<32} {'browser min':>11} {'median':>7} {'max':>6}   {'kernel median':>13}")
    worst = 0.0
    with LabSession() as lab:
        for chapter in chapters:
            name = lab.add_notebook(f"panel_{chapter.name}", panel_notebook(chapter))
            browser, kernel = measure(lab, name, args.changes, args.verbose)
            med = statistics.median(browser)
            worst = max(worst, med)
            print(f"{chapter.stem:<32} {min(browser):>9.0f} ms {med:>4.0f} ms {max(browser):>3.0f} ms"
                  f"   {statistics.median(kernel):>10.0f} ms", flush=True)
    print(f"slowest panel median: {worst:.0f} ms ({'met' if worst <= TARGET_MS else 'NOT met'}: "
          f"target {TARGET_MS:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
