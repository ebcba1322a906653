"""The transports a test in tests/unit/ can be run over: in memory (the fast loop), and over
a real stdio process or real HTTP, which make that case an end-to-end one (marked ``e2e``,
so that plain ``pytest`` leaves it to ``pytest --all``)."""

from __future__ import annotations

import pytest

MEMORY = pytest.param("memory", id="memory")
STDIO = pytest.param("stdio", id="stdio", marks=pytest.mark.e2e)
HTTP = pytest.param("http", id="http", marks=pytest.mark.e2e)

#: For ``@pytest.mark.parametrize("kind", TRANSPORTS)``: memory, stdio, http.
TRANSPORTS = [MEMORY, STDIO, HTTP]
#: Memory and stdio.
MEMORY_AND_STDIO = [MEMORY, STDIO]
