"""A real, published OpenAPI document for the tests of mcpkit.openapi: the REST API of
JupyterLab Server (OpenAPI 3.0.3: path and query parameters, JSON bodies, an enum,
``nullable``, local references), which the ``jupyterlab-server`` package on PyPI ships in
its wheel as ``jupyterlab_server/rest-api.yml``.

The package depends on the whole Jupyter server, so it is not installed: ``python
scripts/setup_tests.py`` downloads the pinned wheel alone (``pip download --no-deps``)
into ``.cache/openapi/`` and checks its digest, and the test reads the document from it.
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path
from typing import Any, Final

import yaml

from support.paths import ROOT, SETUP

PACKAGE: Final = "jupyterlab-server"
VERSION: Final = "2.28.1"
WHEEL: Final = ROOT / ".cache" / "openapi" / f"jupyterlab_server-{VERSION}-py3-none-any.whl"
SHA256: Final = "4bd36c7c11d872e15cefa4951e12380a47e6901687165332dd50a007cb367ad9"
MEMBER: Final = "jupyterlab_server/rest-api.yml"


def wheel_ok(path: Path = WHEEL) -> bool:
    """Whether the pinned wheel is there, with its digest."""
    return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == SHA256


def jupyterlab_rest_api() -> dict[str, Any]:
    """The document, parsed (the test fails, naming the setup script, without the wheel)."""
    assert wheel_ok(), f"{WHEEL} is missing or not the pinned {PACKAGE}=={VERSION}: run {SETUP}"
    with zipfile.ZipFile(WHEEL) as wheel:
        data = yaml.safe_load(wheel.read(MEMBER))
    assert isinstance(data, dict)
    return data
