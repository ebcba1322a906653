"""The two protocol revisions the tests speak: the modern era's and the newest legacy one."""

from __future__ import annotations

import pytest

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
#: For ``@pytest.mark.parametrize("era", ERAS)``: each test once per era, named by it.
ERAS = [pytest.param(MODERN, id="modern"), pytest.param(LEGACY, id="legacy")]
