"""Print the public API of mcpkit as JSON: every name of ``mcpkit.__all__`` with its kind
and signature, and for classes their public methods, properties and fields.

``tests/unit/test_api_snapshot.py`` compares this with ``tests/support/public_api.json``:
a change to the public surface must be made on purpose (regenerate the file with
``python scripts/api_snapshot.py > tests/support/public_api.json``) and noted in
CHANGELOG.md.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from typing import Any

import mcpkit


def _sig(obj: Any) -> str:
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "?"
    return re.sub(r" at 0x[0-9a-f]+", "", text)  # a default's repr names its address


def _describe_class(cls: type) -> dict[str, Any]:
    members: dict[str, str] = {}
    for name in sorted(dir(cls)):
        if name.startswith("_") and name not in ("__init__", "__call__", "__aenter__", "__aexit__", "__enter__", "__exit__",
                                                  "__aiter__", "__anext__", "__iter__", "__next__"):
            continue
        try:
            raw = inspect.getattr_static(cls, name)
        except AttributeError:
            continue
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is not None and owner.__module__.split(".")[0] not in ("mcpkit",) and name != "__init__":
            continue  # inherited from the standard library or msgspec: not ours
        if isinstance(raw, property):
            members[name] = "property"
        elif isinstance(raw, (staticmethod, classmethod)):
            members[name] = f"{type(raw).__name__}{_sig(getattr(cls, name))}"
        elif inspect.isfunction(raw):
            members[name] = ("async def" if inspect.iscoroutinefunction(raw) else "def") + _sig(raw)
        elif callable(raw) and not isinstance(raw, type):
            members[name] = "callable"
        else:
            members[name] = "attribute"
    fields = getattr(cls, "__struct_fields__", None) or tuple(getattr(cls, "__dataclass_fields__", {}))
    # the public ancestors only: how the implementation is split into internal classes is not API
    bases = sorted({k.__name__ for k in cls.__mro__[1:] if k.__name__ in mcpkit.__all__ or k.__module__ == "builtins"})
    out: dict[str, Any] = {"kind": "class", "bases": bases, "members": members}
    if fields:
        out["fields"] = list(fields)
    return out


def snapshot() -> dict[str, Any]:
    api: dict[str, Any] = {}
    for name in sorted(mcpkit.__all__):
        obj = getattr(mcpkit, name)
        if isinstance(obj, type):
            api[name] = _describe_class(obj)
        elif inspect.isfunction(obj):
            api[name] = {"kind": "function", "signature": _sig(obj)}
        elif isinstance(obj, (str, int, float, tuple, frozenset, list)):
            api[name] = {"kind": "constant", "value": sorted(obj) if isinstance(obj, frozenset) else obj}
        else:
            api[name] = {"kind": type(obj).__name__, "repr": repr(obj)[:200]}
    return api


if __name__ == "__main__":
    json.dump(snapshot(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
