"""The programs some tests run that pip does not install: Debian's ``chromium`` (the docs
site in a browser), ``redis-server`` and ``haproxy`` (several nodes), ``node`` and ``npm``
(the npm peers). ``scripts/setup_tests.py`` installs them; a test that finds one missing
fails (never skips) and says so."""

from __future__ import annotations

import shutil

import pytest

from support.paths import SETUP


def require(command: str) -> str:
    """The path of ``command``, or the test fails, naming the setup script."""
    found = shutil.which(command)
    if found is None:
        pytest.fail(f"{command} is not installed: run `{SETUP}` first (as root, it apt-gets what is missing)", pytrace=False)
    return found
