"""Logging to the client: ``logging/setLevel`` (legacy era). Modern clients send
their level in each request's ``_meta`` instead; :class:`~mcpkit.Context` applies both."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol.types import EmptyResult, SetLevelParams
from ..context import Context
from ..session import Session

if TYPE_CHECKING:
    from ..registry import Registry

__all__ = ["set_level"]


async def set_level(reg: Registry, ctx: Context, params: SetLevelParams) -> EmptyResult:
    session = ctx._session
    if isinstance(session, Session):
        session.log_level = params.level
    return EmptyResult()
