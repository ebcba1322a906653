"""Finding the :class:`~mcpkit.Server` that ``mcpkit run`` and ``mcpkit dev`` serve:
``app.py`` (a file), ``package.module`` (importable), either with ``:name`` (an
attribute: a ``Server``, or a function of no arguments that returns one)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from ..server.server import Server

__all__ = ["AppNotFound", "split_app", "load_server"]

#: The names looked up, in order, when the app names no attribute.
_USUAL_NAMES = ("server", "mcp", "app")


class AppNotFound(Exception):
    """The app spec names no file, module or server (the message says which)."""


def split_app(spec: str) -> tuple[str, str | None]:
    """``"app.py:server"`` -> ``("app.py", "server")``; no ``:name`` -> ``(spec, None)``.
    A Windows drive letter (``C:\\app.py``) is not a name."""
    head, sep, tail = spec.rpartition(":")
    if not sep or not tail.isidentifier() or (len(head) == 1 and head.isalpha()):
        return spec, None
    return head, tail


def _import_file(path: Path) -> ModuleType:
    """Import ``path`` as a module named after it, its folder first on ``sys.path`` (so
    it imports its neighbours), never as ``__main__`` (its ``if __name__ ==
    "__main__":`` block does not run)."""
    folder = str(path.parent.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = path.stem if path.stem.isidentifier() and path.stem not in sys.modules else "_mcpkit_app"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AppNotFound(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # so that the app's own type hints resolve
    spec.loader.exec_module(module)
    return module


def _module(target: str) -> ModuleType:
    path = Path(target)
    if target.endswith(".py") or os.sep in target or path.is_file():
        if not path.is_file():
            raise AppNotFound(f"no such file: {target}")
        return _import_file(path)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name and target.startswith(exc.name):
            raise AppNotFound(f"no such file or module: {target}") from None
        raise


def load_server(spec: str) -> Server:
    """The server ``spec`` names. Raises :class:`AppNotFound` when there is none (the
    message lists the servers there are); whatever importing the app raises
    propagates."""
    target, name = split_app(spec)
    module = _module(target)
    if name is not None:
        if not hasattr(module, name):
            raise AppNotFound(f"{target} has no attribute {name!r}")
        value = getattr(module, name)
        if not isinstance(value, Server) and callable(value):
            value = value()  # a factory
        if not isinstance(value, Server):
            raise AppNotFound(f"{target}:{name} is a {type(value).__name__}, not an mcpkit Server")
        return value
    for usual in _USUAL_NAMES:
        value = getattr(module, usual, None)
        if isinstance(value, Server):
            return value
    found = [key for key, value in vars(module).items() if isinstance(value, Server)]
    if len(found) == 1:
        server: Server = getattr(module, found[0])
        return server
    if found:
        raise AppNotFound(f"{target} has several servers ({', '.join(found)}): say which, as {target}:NAME")
    raise AppNotFound(f"{target} has no mcpkit Server (looked for {', '.join(_USUAL_NAMES)} and any other)")
