"""What registration says about a feature besides its function: :class:`ToolOptions`,
the one struct that ``@server.tool(...)`` and ``server.add_tool(...)`` fill and that the
tool's description (:mod:`.tools`) and its :class:`~.tool_def.ToolDef` read, and the
icons every feature may carry (:func:`wire_icons`).

The options are kept as given; each is checked where the feature is described, in the
order a registration has always reported its problems: the signature or schema first,
then the time limit, then the icons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ...protocol.types import Icon, ToolAnnotations
from ..tasks import TaskMode

__all__ = ["ToolOptions", "wire_icons"]


class ToolOptions(msgspec.Struct, frozen=True, kw_only=True):
    """How a tool is registered (the keyword arguments of ``Server.tool`` and
    ``Server.add_tool``, but ``scopes``, which are the registry's).

    ``name`` and ``description`` default to the function's name and docstring summary
    (a schema tool gives both). ``structured_output`` applies to a function's return
    annotation, ``output_schema`` to a schema tool. ``task`` is already a
    :data:`~mcpkit.server.tasks.TaskMode` (``task_mode()`` checked it); ``timeout`` is
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
