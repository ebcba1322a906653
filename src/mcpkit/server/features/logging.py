"""Logging to the client: ``logging/setLevel`` (legacy era). Modern clients send
their level in each request's ``_meta`` instead; :class:`~mcpkit.Context` applies both."""

from __future__ import annotations

from ...protocol.types import EmptyResult, SetLevelParams
from ..context import Call, Context
from ..registry import Registry
from ..session import Session

__all__ = ["set_level"]


async def set_level(reg: Registry, ctx: Context, call: Call, params: SetLevelParams) -> EmptyResult:
    """The connection's log level from now on (its later requests' contexts apply it)."""
    session = call.session
    if isinstance(session, Session):
        session.log_level = params.level
    return EmptyResult()
