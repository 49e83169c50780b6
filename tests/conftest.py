"""Fixtures for the tests under tests/: the built site, its server and a headless Chromium (tests/site_support.py)."""

from site_support import browser_context, server, site  # noqa: F401  (pytest finds fixtures by name here)
