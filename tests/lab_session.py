"""A JupyterLab server over a scratch folder, driven by headless Chromium: for the JupyterLab tests and the
panel benchmark (benchmarks/panels.py), which see the book as a reader of `make lab` does.

The server runs the project's own Python (its kernel imports ``models``), with its settings, workspace and
notebooks in temporary folders, so a run never touches notebooks/ or the user's JupyterLab state.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
CURRENT = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook tab on screen
# The outer limit of every wait on the server, the page or the kernel: each waits on a condition (started,
# rendered, idle), so the limit only ends one that hangs. On two busy cores JupyterLab took minutes.
WAIT_S = 600.0
# No news fetch (and its pop-up), no autosave (the scratch notebooks are thrown away), and every cell in the
# page (JupyterLab 4 otherwise renders only the cells in view).
_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}


def panel_cells(chapter: Path) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A chapter's import cell (its first code cell) and its live-panel cell, or None if it has no panel."""
    nb = json.loads(chapter.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    panel = [c for c in code if "widgets.panel(" in "".join(c["source"])]
    return (code[0], panel[0]) if panel else None


def chapters_with_panels() -> list[Path]:
    """The chapter notebooks that have a live panel, in book order."""
    return [p for p in sorted((ROOT / "notebooks").glob("0*.ipynb")) if panel_cells(p) is not None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabSession:
    """``with LabSession() as lab:`` a running server (``lab.url``) and a browser (``lab.new_page()``)."""

    def __init__(self, python: str = sys.executable, startup_s: float = WAIT_S) -> None:
        self.python, self.startup_s = python, startup_s
        self.token = "latch-book"
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.tmp = Path(tempfile.mkdtemp(prefix="latch-lab-"))
        self.root = self.tmp / "notebooks"
        self.root.mkdir()
        self._server: subprocess.Popen | None = None
        self._pw: Any = None
        self.browser: Any = None

    def add_notebook(self, name: str, nb: dict[str, Any] | Path) -> str:
        """Put a notebook (a dict, or a copy of a file) in the scratch folder; returns its name."""
        if isinstance(nb, Path):
            shutil.copy(nb, self.root / name)
        else:
            (self.root / name).write_text(json.dumps(nb), encoding="utf-8")
        return name

    def __enter__(self) -> "LabSession":
        settings = self.tmp / "settings"
        for rel, value in _SETTINGS.items():
            path = settings / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value), encoding="utf-8")
        env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings),
                   JUPYTERLAB_WORKSPACES_DIR=str(self.tmp / "workspaces"), PYDEVD_DISABLE_FILE_VALIDATION="1")
        cmd = [self.python, "-m", "jupyter", "lab", "--no-browser", f"--port={self.port}", "--ip=127.0.0.1",
               f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}"]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        self._log = open(self.tmp / "server.log", "w")
        self._server = subprocess.Popen(cmd, cwd=self.root, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_s
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2).read()
                break
            except OSError:
                if self._server.poll() is not None or time.monotonic() > deadline:
                    self.__exit__(None, None, None)
                    raise RuntimeError(f"JupyterLab did not start: see {self.tmp / 'server.log'}")
                time.sleep(0.3)  # the poll's interval; the limit is startup_s
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.browser is not None:
            self.browser.close()
        if self._pw is not None:
            self._pw.stop()
        if self._server is not None and self._server.poll() is None:
            self._server.terminate()
            try:
                self._server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._server.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def open(self, name: str, width: int = 1280, height: int = 1000) -> Any:
        """A new page with the notebook open and its kernel ready."""
        page = self.new_page(width, height)
        page.goto(f"{self.url}/lab/tree/{name}?reset&token={self.token}")  # reset: no tabs from earlier pages
        page.wait_for_selector(f"{CURRENT} .jp-Cell")
        # On a busy machine the kernel list can arrive after the notebook, and JupyterLab then asks which kernel
        # to start: the notebook's own (python3) is the one preselected. Accept it until the kernel is idle.
        deadline = time.monotonic() + WAIT_S
        while not page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").count():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the kernel of {name} was not idle after {WAIT_S:.0f} s")
            if page.locator(".jp-Dialog .jp-mod-accept").count():
                page.click(".jp-Dialog .jp-mod-accept")
            page.wait_for_timeout(250)  # the poll's interval
        self.wait_idle(page)
        return page

    def new_page(self, width: int = 1280, height: int = 1000) -> Any:
        """A browser page whose every wait (Playwright's default: 30 s) has the session's outer limit."""
        page = self.browser.new_page(viewport={"width": width, "height": height})
        page.set_default_timeout(WAIT_S * 1000)
        return page

    @staticmethod
    def wait_idle(page: Any, timeout_s: float = WAIT_S) -> None:
        """Wait until the kernel is idle and no cell is queued or running (no '[*]' prompt)."""
        page.wait_for_function(
            """() => {
                const ind = document.querySelector('.jp-Notebook-ExecutionIndicator');
                const idle = ind && ind.getAttribute('data-status') === 'idle';
                const busy = [...document.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('*'));
                return idle && !busy;
            }""", timeout=timeout_s * 1000, polling=200)

    def run_all(self, page: Any, timeout_s: float = WAIT_S) -> None:
        """Run every cell, markdown included (jupyterlab-myst evaluates the prose's inline expressions)."""
        prompts = f"{CURRENT} .jp-CodeCell .jp-InputPrompt"
        # The stored prompts are blanked first: a code cell shows a prompt again only once Run All has run it.
        page.eval_on_selector_all(prompts, "els => els.forEach(p => { p.textContent = ''; })")
        page.click(f"{CURRENT} .jp-Notebook")
        page.keyboard.press("Escape")
        page.click("li.lm-MenuBar-item:has-text('Run')")
        page.click("li.lm-Menu-item:has-text('Run All Cells')")
        page.wait_for_function(f"""() => [...document.querySelectorAll("{prompts}")]
            .every(p => p.textContent.includes('['))""", timeout=timeout_s * 1000, polling=200)
        self.wait_idle(page, timeout_s)
