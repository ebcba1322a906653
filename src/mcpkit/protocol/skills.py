"""The skills extension (SEP-2640, ``io.modelcontextprotocol/skills``): its wire types,
its limits and the digest both sides compute (docs/skills.md).

A server that declares the extension under ``capabilities.extensions`` serves
``skills/list`` (paginated entries, each a complete manifest of the skill's files) and
``skills/get`` (one entry by the URI of its ``SKILL.md``); with ``directoryRead: true``
it also serves ``resources/directory/read`` (the direct children of a directory
resource, ``mimeType: "inode/directory"``). The files themselves are ordinary resources,
read with ``resources/read``; a client checks what it reads against the entry's
``size`` and ``digest`` before using it. The extension is defined against the
2026-07-28 revision.
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal

from .content import Resource
from .params import Params
from .types import Cacheable, Result
from .wire import WireStruct

__all__ = [
    "SKILLS_EXTENSION",
    "SKILL_METHODS",
    "DIRECTORY_READ",
    "DIRECTORY_MIME_TYPE",
    "SKILL_MD",
    "SKILL_MD_MIME_TYPE",
    "DYNAMIC",
    "MAX_RESOURCES_PER_SKILL",
    "MAX_SKILL_BYTES",
    "SKILL_NAME",
    "SkillResource",
    "Skill",
    "ListSkillsResult",
    "GetSkillParams",
    "GetSkillResult",
    "DirectoryReadParams",
    "DirectoryReadResult",
    "digest_of",
]

#: The extension's identifier, under ``capabilities.extensions``.
SKILLS_EXTENSION: Final = "io.modelcontextprotocol/skills"
#: The extension's own requests; ``resources/directory/read`` only with ``directoryRead``.
SKILL_METHODS: Final = frozenset({"skills/list", "skills/get"})
DIRECTORY_READ: Final = "resources/directory/read"
#: The media type of a directory resource.
DIRECTORY_MIME_TYPE: Final = "inode/directory"
SKILL_MD: Final = "SKILL.md"
SKILL_MD_MIME_TYPE: Final = "text/markdown"
#: ``resources`` of a skill whose content is generated, so that no digests can be published.
DYNAMIC: Final = "dynamic"
#: What every host must accept of one skill, and no server should exceed.
MAX_RESOURCES_PER_SKILL: Final = 512
MAX_SKILL_BYTES: Final = 16 * 1024 * 1024
#: A skill's name (the Agent Skills rules): 1-64 lowercase letters, digits and hyphens,
#: no hyphen first, last or twice in a row (use ``fullmatch``; ``\Z``, not ``$``, so that no
#: trailing newline passes).
SKILL_NAME: Final = re.compile(r"(?!-)(?!.*--)[a-z0-9-]{1,64}(?<!-)\Z")


class SkillResource(WireStruct, kw_only=True):
    """One file of a skill: its URI, the SHA-256 of its raw bytes (``sha256:`` and 64
    lowercase hex digits) and their length."""

    uri: str
    digest: str
    size: int


class Skill(WireStruct, kw_only=True):
    """A skill's entry (``skills/list``, ``skills/get``).

    Attributes:
        uri: The URI of its ``SKILL.md``; its last path segment before ``/SKILL.md`` is
            the skill's name.
        frontmatter: The ``SKILL.md`` YAML frontmatter, verbatim, as a JSON object
            (``name`` and ``description`` always present).
        resources: Every file of the skill, ``SKILL.md`` included, each once; or
            ``"dynamic"`` when the content is generated and has no stable digests.
    """

    uri: str
    frontmatter: dict[str, Any]
    resources: list[SkillResource] | Literal["dynamic"]


class ListSkillsResult(Cacheable, kw_only=True):
    """One page of ``skills/list``: entries are never split across pages."""

    skills: list[Skill]
    next_cursor: str | None = None


class GetSkillParams(Params, kw_only=True):
    uri: str


class GetSkillResult(Cacheable, kw_only=True):
    """``skills/get``: one entry, no cursor."""

    skill: Skill


class DirectoryReadParams(Params, kw_only=True):
    uri: str
    cursor: str | None = None


class DirectoryReadResult(Result, kw_only=True):
    """``resources/directory/read``: one page of a directory's direct children
    (subdirectories with ``mimeType: "inode/directory"``)."""

    resources: list[Resource]
    next_cursor: str | None = None


def digest_of(data: bytes) -> str:
    """The extension's digest of ``data``: ``sha256:`` and 64 lowercase hex digits."""
    import hashlib  # here, not at import time: only a server serving skills needs it

    return "sha256:" + hashlib.sha256(data).hexdigest()
