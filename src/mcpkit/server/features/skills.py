"""The requests of the skills extension (docs/skills.md): ``skills/list``,
``skills/get`` and ``resources/directory/read``, answered from the registry's
:class:`~mcpkit.server.skills.SkillCatalog`. They exist in the 2026-07-28 era only (the
legacy era's policy refuses them before they get here), and only on a server that
serves skills — or a proxy whose upstream server declares the extension, which gets them
forwarded: elsewhere they are unknown methods, as the extension says of a server that
does not declare it."""

from __future__ import annotations

from ...protocol.errors import INVALID_PARAMS, METHOD_NOT_FOUND, McpError, echo, flatten_text
from ...protocol.skills import (
    DIRECTORY_READ,
    SKILLS_EXTENSION,
    DirectoryReadParams,
    DirectoryReadResult,
    GetSkillParams,
    GetSkillResult,
    ListSkillsResult,
)
from ...protocol.types import CursorParams
from ..context import Call, Context
from ..definitions.resources import check_length
from ..registry import Registry, Remote

__all__ = ["list_skills", "get_skill", "read_directory"]


def _remote(reg: Registry, method: str) -> Remote | None:
    """The remote server the request goes to (a proxy's upstream that declared the
    extension, when this server serves no skills of its own), or None: this server
    answers. Raises -32601 unless this server declares the extension (and, for a
    directory read, ``directoryRead``)."""
    if reg.skills:
        if method == DIRECTORY_READ and not reg.skills.directory_read:
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {method} (this server does not declare directoryRead)")
        return None
    settings = reg.remote.skills if reg.remote is not None else None
    if settings is None:
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method} (this server serves no skills: {SKILLS_EXTENSION})")
    if method == DIRECTORY_READ and settings.get("directoryRead") is not True:
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method} (this server does not declare directoryRead)")
    return reg.remote


async def list_skills(reg: Registry, ctx: Context, call: Call, params: CursorParams) -> ListSkillsResult:
    """One page of the skills' entries (an entry is never split). Raises -32602 for a
    cursor that is not ours."""
    remote = _remote(reg, "skills/list")
    if remote is not None:
        return await remote.forward(ctx, call, "skills/list", params)  # type: ignore[no-any-return]
    page, nxt = reg.page(reg.skills.entries(), params.cursor)
    return ListSkillsResult(skills=page, next_cursor=nxt)


async def get_skill(reg: Registry, ctx: Context, call: Call, params: GetSkillParams) -> GetSkillResult:
    """The entry of the skill whose SKILL.md ``params.uri`` is. Raises -32602 (``data:
    {"uri"}``) for any other URI."""
    remote = _remote(reg, "skills/get")
    if remote is not None:
        return await remote.forward(ctx, call, "skills/get", params)  # type: ignore[no-any-return]
    uri = params.uri
    check_length(uri, reg.settings.max_uri_length)
    entry = reg.skills.entry(uri)
    if entry is None:
        raise McpError(INVALID_PARAMS, f"No skill is served at {flatten_text(uri, 256)}", {"uri": echo(uri)})
    return GetSkillResult(skill=entry)


async def read_directory(reg: Registry, ctx: Context, call: Call, params: DirectoryReadParams) -> DirectoryReadResult:
    """One page of the direct children of a skill's directory (subdirectories as
    ``inode/directory`` resources). Raises -32602 (``data: {"uri"}``) for a URI that is a
    file or no directory of a served skill, or a cursor that is not ours."""
    remote = _remote(reg, DIRECTORY_READ)
    if remote is not None:
        return await remote.forward(ctx, call, DIRECTORY_READ, params)  # type: ignore[no-any-return]
    uri = params.uri
    check_length(uri, reg.settings.max_uri_length)
    children = reg.skills.children(uri)
    if children is None:
        shown = flatten_text(uri, 256)
        if reg.knows_resource(uri):
            raise McpError(INVALID_PARAMS, f"{shown} is not a directory resource", {"uri": echo(uri)})
        raise McpError(INVALID_PARAMS, f"No directory resource at {shown}", {"uri": echo(uri)})
    page, nxt = reg.page(children, params.cursor)
    return DirectoryReadResult(resources=page, next_cursor=nxt)
