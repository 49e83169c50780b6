# Latch contention, modelled: build the book, run the tests, open the notebooks.
#   make install create .venv, install the pinned requirements, and compile the engine's cache (once)
#   make book    build the static site from clean into _build/html (offline; from the notebooks' stored outputs)
#   make pdf     the whole book as one PDF, _build/book.pdf, printed by headless Chromium from the site
#   make test    engine tests + nbval (strict) on notebooks + site build + browser tests
#   make lab     JupyterLab on notebooks/ with working widgets
#   make sweep   recompute every explorer grid (replicated seeds) and study (coverage) into book/data/
#   make execute re-execute every notebook in place (the outputs nbval compares)
#   make clean   remove build outputs (keeps .venv)
# Works on a fresh Debian machine with Python 3.11, node/npm and network access to PyPI, npm and apt.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
JOBS ?= 2
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: help install warm system-deps vendor book pdf test lab sweep execute clean

help:
	@sed -n '2,10p' Makefile | sed 's/^# *//'

warm: install

$(PY):
	$(PYTHON) -m venv $(VENV)

# Pinned dependencies, then the local package (no dependency resolution: requirements.txt pins all).
$(INSTALLED): requirements.txt pyproject.toml | $(PY)
	$(PY) -m pip install -r requirements.txt
	$(PY) -m pip install --no-deps -e .
	touch $@

# Then the engine's compiled cache (models/engine/__pycache__): about 30 s the first time and after an
# edit of models/engine/, a second or two otherwise, so that no run, notebook or test waits for numba.
install: $(INSTALLED)
	$(PY) -m models warm

# Debian packages: chromium for the browser tests, npm for vendoring MathJax (only if missing).
system-deps:
	@missing=""; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update; \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y $$missing; \
	fi

# Offline assets (vega bundle from the pinned wheel, MathJax via npm ci) into book/_vendor/.
vendor: install
	@command -v npm >/dev/null || $(MAKE) --no-print-directory system-deps
	$(PY) scripts/vendor_assets.py

# Build from clean with warnings as errors, from the notebooks' stored outputs (`make execute` writes them, `make
# test` checks them); prints where the site is and how to serve it.
book: install
	@command -v npm >/dev/null || $(MAKE) --no-print-directory system-deps
	$(PY) scripts/build_site.py

# The book as one PDF (scripts/build_pdf.py), printed from a site built from clean just before; offline.
pdf: book system-deps
	$(PY) scripts/build_pdf.py

# One pytest run on $(JOBS) processes. --dist loadfile keeps each notebook (nbval runs its cells in
# order in one kernel) and tests/test_site.py (which builds the site once, then drives Chromium over
# it) on a single worker each. Any failure, and "no tests collected" (exit 5), fails the target.
# --nbval-cell-timeout is an outer limit that only ends a hung cell (10 min), not a budget a slow machine must meet.
test: install system-deps
	$(PY) -m pytest -n $(JOBS) --dist loadfile -p no:cacheprovider \
	  --nbval --nbval-current-env --nbval-cell-timeout=600 \
	  --nbval-sanitize-with tests/nbval_sanitize.cfg \
	  tests notebooks

# Rooted at the project, opened on notebooks/: a chapter's citation and glossary links (../book/*.md) open in the lab.
lab: install vendor
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks $(if $(SUDO),,--allow-root)

sweep: install
	@names="$$($(PY) -c 'from models.book.sweep import studies, sweeps; print(" ".join(sorted([*sweeps(), *studies()])))')"; \
	if [ -z "$$names" ]; then echo "no sweeps under models/book/sweeps/"; exit 1; fi; \
	for name in $$names; do echo "+ python -m models sweep $$name"; $(PY) -m models sweep "$$name"; done

# Stored outputs for nbval, with no widget state (see scripts/execute_notebooks.py).
execute: install
	$(PY) scripts/execute_notebooks.py --jobs $(JOBS)

clean:
	rm -rf _build book/_vendor node_modules .pytest_cache
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -exec rm -rf {} +
