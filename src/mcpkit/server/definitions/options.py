"""What registration says about a feature besides its function: :class:`ToolOptions`,
the one struct that ``@server.tool(...)`` and ``server.add_tool(...)`` fill and that the
tool's description (:mod:`.tools`) and its :class:`~.tool_def.ToolDef` read, with the
:data:`TaskMode` of its ``task=`` (:func:`task_mode`), and the icons every feature may
carry (:func:`wire_icons`).

The options are kept as given; each is checked where the feature is described, in the
order a registration has always reported its problems: the signature or schema first,
then the time limit, then the icons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec

from ...protocol.types import Icon, ToolAnnotations

__all__ = ["ToolOptions", "TaskMode", "task_mode", "wire_icons"]

#: How a tool runs for a client that declared the tasks extension (docs/tasks.md): as a
#: task when it can (``"optional"``), only as a task (``"required"``: -32021 for other
#: clients), as a task from the moment its handler calls ``ctx.start_task()``
#: (``"deferred"``), or never (None). The task manager (server/tasks.py) reads it.
TaskMode = Literal["optional", "required", "deferred"] | None


def task_mode(task: bool | str) -> TaskMode:
    """The :data:`TaskMode` of ``@server.tool(task=...)``: True is ``"optional"``.
    Raises ``ValueError`` for anything else than a bool, ``"optional"``, ``"required"``
    or ``"deferred"``."""
    if task is True or task == "optional":
        return "optional"
    if task == "required" or task == "deferred":
        return task
    if task is False:
        return None
    raise ValueError("task must be True, False, 'optional', 'required' or 'deferred'")


class ToolOptions(msgspec.Struct, frozen=True, kw_only=True):
    """How a tool is registered (the keyword arguments of ``Server.tool`` and
    ``Server.add_tool``, but ``scopes``, which are the registry's).

    ``name`` and ``description`` default to the function's name and docstring summary
    (a schema tool gives both). ``structured_output`` applies to a function's return
    annotation, ``output_schema`` to a schema tool. ``task`` is already a
    :data:`TaskMode` (:func:`task_mode` checked it); ``timeout`` is
    checked when the tool is described (``ValueError`` unless positive).
    """

    name: str | None = None
    title: str | None = None
    description: str | None = None
    annotations: ToolAnnotations | Mapping[str, Any] | None = None
    structured_output: bool | None = None
    output_schema: Mapping[str, Any] | None = None
    meta: dict[str, Any] | None = None
    icons: Sequence[Icon | Mapping[str, Any]] | None = None
    timeout: float | None = None
    task: TaskMode = None


def wire_icons(icons: Sequence[Icon | Mapping[str, Any]] | None) -> list[Icon] | None:
    """Icons as wire structs (a mapping is converted; None for none). Raises
    ``ValueError`` for one without a ``src``."""
    if not icons:
        return None
    try:
        return [i if isinstance(i, Icon) else msgspec.convert(i, Icon) for i in icons]
    except msgspec.ValidationError as exc:
        raise ValueError(f"invalid icon: {exc}") from None
