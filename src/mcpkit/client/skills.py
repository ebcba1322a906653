"""The client's side of the skills extension (SEP-2640, docs/skills-client.md): listing
and getting skill entries, loading a skill and reading its files, each file checked
against the entry the client holds before any of it is handed back.

The order is the extension's: an entry (from ``skills/list`` or ``skills/get``) is held
first, and nothing of a skill is read before it is loaded (:meth:`Skills.load`, the one
place ``SKILL.md`` is fetched). Loading checks the entry itself before any read (a
manifest that lists ``SKILL.md``, files inside the skill's root, each once, with
well-formed digests, within the limits of 512 files and 16 MiB), then the bytes read
(their length against ``size``, their SHA-256 against ``digest``), then ``SKILL.md``'s
YAML frontmatter against the entry's, field by field. A supporting file
(:meth:`Skills.read_file`) is read only when the held entry lists it, and checked the
same way. Whatever fails is refused with :class:`SkillVerificationError` and never
returned. A ``"dynamic"`` skill has no digests to check: it loads only when the caller
opts in, and what is read of it is bounded by the total-size limit.

The client learns whether the server declared the extension from the capabilities it
was told (``initialize``, or ``server/discover``, asked once first when a pinned modern
revision skipped it); a server that did not is sent no skills request at all, and
``resources/directory/read`` goes only to a server that declared ``directoryRead``.

The frontmatter is parsed with PyYAML (the ``skills`` extra), imported on the first load.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import importlib
import re
import unicodedata
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol
from urllib.parse import quote, unquote

from ..protocol.errors import INTERNAL_ERROR, METHOD_NOT_FOUND, McpError, flatten_text
from ..protocol.skills import (
    DIRECTORY_READ,
    DYNAMIC,
    MAX_RESOURCES_PER_SKILL,
    MAX_SKILL_BYTES,
    SKILL_MD,
    SKILL_NAME,
    SKILLS_EXTENSION,
    DirectoryReadResult,
    GetSkillResult,
    ListSkillsResult,
    Skill,
    SkillResource,
    digest_of,
)
from ..protocol.types import DiscoverResult, ReadResourceResult
from .core import CallCore
from .features import all_pages

if TYPE_CHECKING:
    from .core import Negotiated
    from .retry import RetryPolicy

__all__ = ["SkillsCore", "Skills", "LoadedSkill", "SkillFile", "SkillVerificationError", "parse_frontmatter"]

_DIGEST: Final = re.compile(r"sha256:[0-9a-f]{64}\Z")
_SCHEME: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
#: Characters a path segment keeps as they are, as mcpkit's server encodes a file's name
#: (RFC 3986 unreserved and sub-delims, and ``@``); the rest is percent-encoded.
_SEGMENT_SAFE: Final = "-._~!$&'()*+,;=@"
#: How many YAML nodes a frontmatter may hold before the comparison gives up (aliases
#: can make a small document a very large, or endless, one).
_MAX_NODES: Final = 100_000
_MAX_DEPTH: Final = 64


class SkillVerificationError(McpError):
    """A skill's entry or content failed verification, and was refused (local, -32603).

    Attributes:
        uri: The URI of the file (or, for the entry, of its ``SKILL.md``) refused.
        reason: Which check failed: ``"entry"`` (a malformed entry), ``"limits"`` (over
            512 files or 16 MiB), ``"dynamic"`` (a skill without digests, not opted
            into), ``"size"``, ``"digest"``, ``"frontmatter"``, ``"unlisted"`` (a file
            the held entry does not list), or ``"content"`` (a read that did not return
            the file's contents).
    """

    local = True

    def __init__(self, uri: str, reason: str, message: str) -> None:
        super().__init__(INTERNAL_ERROR, message, {"uri": uri, "reason": reason})
        self.uri = uri
        self.reason = reason


@dataclasses.dataclass(frozen=True)
class SkillFile:
    """A file of a loaded skill, read and verified.

    Attributes:
        uri: Its resource URI.
        path: Its path relative to the skill's root (``"references/FORMS.md"``).
        content: Its raw bytes, which matched the entry's ``size`` and ``digest``
            (unchecked for a ``"dynamic"`` skill).
        mime_type: The media type the server gave, if any.
    """

    uri: str
    path: str
    content: bytes
    mime_type: str | None = None

    @property
    def text(self) -> str:
        """The content as UTF-8 text (undecodable bytes replaced)."""
        return self.content.decode("utf-8", errors="replace")


@dataclasses.dataclass(eq=False)
class LoadedSkill:
    """A skill the client loaded: the entry it holds, and its verified ``SKILL.md``.

    Its supporting files are read with :meth:`Client.read_skill_file`, on the same
    client, against this entry: a file it does not list is refused. To take a changed
    skill, get its entry again (:meth:`Client.get_skill`) and load it anew.

    Attributes:
        entry: The held entry (from ``skills/list`` or ``skills/get``).
        skill_md: ``SKILL.md`` as read and verified.
        frontmatter: Its YAML frontmatter, parsed (equal to ``entry.frontmatter``).
        body: The Markdown after the frontmatter.
    """

    entry: Skill
    skill_md: SkillFile
    frontmatter: dict[str, Any]
    body: str
    #: The client part that loaded it (its files are read through that one only), the
    #: files verified so far, and the bytes read in all (bounded for a dynamic skill).
    _origin: object = dataclasses.field(default=None, init=False, repr=False)
    _cache: dict[str, SkillFile] = dataclasses.field(default_factory=dict, init=False, repr=False)
    _bytes_read: int = dataclasses.field(default=0, init=False, repr=False)

    @property
    def uri(self) -> str:
        """The URI of its ``SKILL.md``."""
        return self.entry.uri

    @property
    def root(self) -> str:
        """The URI of its root directory: ``uri`` without ``/SKILL.md``."""
        return self.entry.uri[: -len(SKILL_MD) - 1]

    @property
    def name(self) -> str:
        """The skill's name: the last segment of its root (equal to ``frontmatter["name"]``)."""
        return self.root.rsplit("/", 1)[-1]

    @property
    def dynamic(self) -> bool:
        """Whether its content is generated (no digests: nothing of it can be verified)."""
        return isinstance(self.entry.resources, str)

    @property
    def files(self) -> list[str] | None:
        """The paths, relative to its root, of the files its entry lists (``SKILL.md``
        included); None for a ``"dynamic"`` skill."""
        if isinstance(self.entry.resources, str):
            return None
        return [self.path_of(item.uri) for item in self.entry.resources]

    def path_of(self, uri: str) -> str:
        """``uri``'s path relative to the skill's root, percent-decoded (``my file.md``);
        the URI itself if it is outside."""
        prefix = self.root + "/"
        return unquote(uri[len(prefix) :]) if uri.startswith(prefix) else uri

    def resolve(self, reference: str) -> str:
        """The URI a reference in the skill names: a path relative to the skill's root
        (``references/GUIDE.md``, ``./a/../b.md``), resolved as a filesystem path would
        be, or an absolute URI (its path under the root resolved the same way). A
        ``#fragment`` is dropped. Each segment is percent-encoded as the server encodes
        a file's name (``my file.md`` is ``my%20file.md``), after decoding what is
        encoded already, so either spelling names the file. Raises ``ValueError`` for an
        empty path, an absolute path, or one that climbs out of the root."""
        target = reference.split("#", 1)[0]
        if _SCHEME.match(target):
            prefix = self.root + "/"
            return self._under_root(target[len(prefix) :], reference) if target.startswith(prefix) else target
        if target.startswith("/") or "\\" in target:
            raise ValueError(f"{flatten_text(reference, 256)!r}: a file of a skill is named relative to its root, or by its URI")
        return self._under_root(target, reference)

    def _under_root(self, path: str, reference: str) -> str:
        parts: list[str] = []
        for raw in path.split("/"):
            segment = unquote(raw)
            if segment in ("", "."):
                continue
            if segment == "..":
                if not parts:
                    raise ValueError(f"{flatten_text(reference, 256)!r} leads out of the skill's root")
                parts.pop()
            else:
                parts.append(quote(segment, safe=_SEGMENT_SAFE))
        if not parts:
            raise ValueError(f"{flatten_text(reference, 256)!r} names no file")
        return self.root + "/" + "/".join(parts)


class SkillsCore(CallCore, Protocol):
    """What the skills requests need of the client's call core: its calls (and the era
    agreed on), what the server said about itself, and ``server/discover``."""

    @property
    def facts(self) -> Negotiated:
        """What the server said about itself (its capabilities)."""
        ...

    async def discover(self, timeout: float | None = None, retry: RetryPolicy | None = None) -> DiscoverResult:
        """``server/discover``, its capabilities recorded in ``facts``."""
        ...


class Skills:
    """The skills requests of one client, made through its call core."""

    def __init__(self, core: SkillsCore) -> None:
        self._core = core
        self._discovered = False

    # --- the server's declaration ------------------------------------------------------------

    async def _declared(self, method: str, timeout: float | None) -> dict[str, Any]:
        """The extension's settings as the server declared them. A modern client pinned
        to its revision has not asked ``server/discover``: it asks once. Raises a local
        ``McpError(-32601)``, before anything of ``method`` is sent, when the server did
        not declare the extension."""
        caps = self._core.facts.server_capabilities
        if not caps and self._core.policy.stateless and not self._discovered:
            caps = (await self._core.discover(timeout)).capabilities or {}
            self._discovered = True
        extensions = caps.get("extensions")
        settings = extensions.get(SKILLS_EXTENSION) if isinstance(extensions, dict) else None
        if not isinstance(settings, dict):
            raise McpError(
                METHOD_NOT_FOUND,
                f"The server does not declare the skills extension ({SKILLS_EXTENSION}): {method} was not sent",
                local=True,
            )
        return settings

    # --- entries ----------------------------------------------------------------------------------

    async def page(self, cursor: str | None, *, timeout: float | None, retry: RetryPolicy | None) -> ListSkillsResult:
        await self._declared("skills/list", timeout)
        params = {"cursor": cursor} if cursor is not None else None
        return await self._core.call("skills/list", params, ListSkillsResult, timeout, retry=retry, idempotent=True)

    async def list_all(self, max_pages: int) -> list[Skill]:
        async def page(cursor: str | None) -> ListSkillsResult:
            return await self.page(cursor, timeout=None, retry=None)

        return await all_pages(page, "skills", max_pages)

    async def iterate(self, max_pages: int) -> AsyncIterator[Skill]:
        cursor: str | None = None
        for _ in range(max_pages):
            page = await self.page(cursor, timeout=None, retry=None)
            for skill in page.skills:
                yield skill
            cursor = page.next_cursor
            if not cursor:
                return
        raise McpError(INTERNAL_ERROR, f"The server's list has more than {max_pages} pages", local=True)

    async def get(self, uri: str, *, timeout: float | None, retry: RetryPolicy | None) -> Skill:
        if not uri.endswith("/" + SKILL_MD):
            raise ValueError(f"{flatten_text(uri, 256)!r}: a skill is named by the URI of its {SKILL_MD}")
        await self._declared("skills/get", timeout)
        result = await self._core.call("skills/get", {"uri": uri}, GetSkillResult, timeout, retry=retry, idempotent=True)
        if result.skill.uri != uri:
            other = flatten_text(result.skill.uri, 256)
            raise SkillVerificationError(uri, "entry", f"skills/get for {flatten_text(uri, 256)} answered the entry of {other}")
        return result.skill

    async def read_directory(
        self, uri: str, cursor: str | None, *, timeout: float | None, retry: RetryPolicy | None
    ) -> DirectoryReadResult:
        settings = await self._declared(DIRECTORY_READ, timeout)
        if settings.get("directoryRead") is not True:
            raise McpError(
                METHOD_NOT_FOUND,
                f"The server does not declare directoryRead in the skills extension: {DIRECTORY_READ} was not sent",
                local=True,
            )
        params: dict[str, Any] = {"uri": uri}
        if cursor is not None:
            params["cursor"] = cursor
        return await self._core.call(DIRECTORY_READ, params, DirectoryReadResult, timeout, retry=retry, idempotent=True)

    # --- loading and reading ---------------------------------------------------------------------

    async def load(self, skill: Skill | str, *, allow_dynamic: bool, timeout: float | None) -> LoadedSkill:
        entry = skill if isinstance(skill, Skill) else await self.get(skill, timeout=timeout, retry=None)
        await self._declared("resources/read", timeout)
        manifest = checked_manifest(entry, allow_dynamic=allow_dynamic)  # before any read
        if manifest is None:
            data, mime_type = await self._fetch(entry.uri, timeout, budget=MAX_SKILL_BYTES)
        else:
            data, mime_type = await self._fetch(entry.uri, timeout)
            verify_content(manifest[entry.uri], data)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SkillVerificationError(entry.uri, "frontmatter", f"{flatten_text(entry.uri, 256)} is not UTF-8 text") from None
        frontmatter, body = parse_frontmatter(text, entry.uri)
        compare_frontmatter(frontmatter, entry.frontmatter, entry.uri)
        skill_md = SkillFile(entry.uri, SKILL_MD, data, mime_type)
        loaded = LoadedSkill(entry, skill_md, frontmatter, body)
        loaded._origin = self
        loaded._bytes_read = len(data)
        if manifest is not None:
            loaded._cache[entry.uri] = skill_md
        return loaded

    async def read_file(self, skill: LoadedSkill, reference: str, *, timeout: float | None) -> SkillFile:
        if skill._origin is not self:
            raise ValueError("this skill was loaded through another client: read its files from the server it came from")
        uri = skill.resolve(reference)
        resources = skill.entry.resources
        if isinstance(resources, str):  # dynamic: any file under the root, within the total bound
            if not uri.startswith(skill.root + "/"):
                raise SkillVerificationError(uri, "unlisted", f"{flatten_text(uri, 256)} is not a file of {skill.name!r}")
            if file_key(skill.root, uri) is None:
                raise SkillVerificationError(
                    uri, "entry", f"{flatten_text(uri, 256)} is not plain segments under the root of {skill.name!r}: not read"
                )
            data, mime_type = await self._fetch(uri, timeout, budget=MAX_SKILL_BYTES - skill._bytes_read)
            # reads under way at once each saw the same budget before their await: what
            # is counted is checked again now, with nothing awaited between check and count
            if len(data) > MAX_SKILL_BYTES - skill._bytes_read:
                raise SkillVerificationError(
                    uri, "limits", f"reading {flatten_text(uri, 256)} takes the dynamic skill past {MAX_SKILL_BYTES} bytes"
                )
            skill._bytes_read += len(data)
            return SkillFile(uri, skill.path_of(uri), data, mime_type)
        cached = skill._cache.get(uri)
        if cached is not None:
            return cached
        listed = next((item for item in resources if item.uri == uri), None)
        if listed is None:  # another spelling of a listed path (encoded differently, or not NFC)
            key = file_key(skill.root, uri)
            listed = next((item for item in resources if key is not None and file_key(skill.root, item.uri) == key), None)
            if listed is not None:
                uri = listed.uri
                cached = skill._cache.get(uri)
                if cached is not None:
                    return cached
        if listed is None:
            raise SkillVerificationError(
                uri, "unlisted", f"{flatten_text(uri, 256)} is not listed in the entry of {skill.name!r}: not read"
            )
        data, mime_type = await self._fetch(uri, timeout)
        verify_content(listed, data)
        found = skill._cache[uri] = SkillFile(uri, skill.path_of(uri), data, mime_type)
        return found

    async def _fetch(self, uri: str, timeout: float | None, *, budget: int | None = None) -> tuple[bytes, str | None]:
        """``resources/read`` of ``uri``: its raw bytes and media type. ``budget``: the
        bytes a dynamic skill may still take (refused past it)."""
        result = await self._core.call("resources/read", {"uri": uri}, ReadResourceResult, timeout, idempotent=True)
        items = [item for item in result.contents if item.uri == uri]
        if len(items) != 1:
            raise SkillVerificationError(
                uri, "content", f"resources/read of {flatten_text(uri, 256)} did not answer that file's contents once"
            )
        item = items[0]
        if item.text is not None and item.blob is None:
            data = item.text.encode("utf-8")
        elif item.blob is not None and item.text is None:
            try:
                data = base64.b64decode(item.blob, validate=True)
            except (binascii.Error, ValueError):
                raise SkillVerificationError(uri, "content", f"the blob of {flatten_text(uri, 256)} is not base64") from None
        else:
            raise SkillVerificationError(uri, "content", f"{flatten_text(uri, 256)} came with neither text nor a blob, or both")
        if budget is not None and len(data) > budget:
            raise SkillVerificationError(
                uri, "limits", f"reading {flatten_text(uri, 256)} takes the dynamic skill past {MAX_SKILL_BYTES} bytes"
            )
        return data, item.mime_type


def checked_manifest(entry: Skill, *, allow_dynamic: bool) -> dict[str, SkillResource] | None:
    """The entry's files by URI, once the entry is found sound and within the limits
    (None for a ``"dynamic"`` skill that may be loaded). Raises
    :class:`SkillVerificationError` otherwise; nothing is read."""
    uri = entry.uri
    shown = flatten_text(uri, 256)

    def refuse(reason: str, why: str) -> SkillVerificationError:
        return SkillVerificationError(uri, reason, f"the entry of {shown} {why}: the skill is not loaded")

    if not uri.endswith("/" + SKILL_MD) or len(uri) <= len(SKILL_MD) + 1:
        raise refuse("entry", f"does not name a {SKILL_MD}")
    root = uri[: -len(SKILL_MD) - 1]
    name = root.rsplit("/", 1)[-1]
    frontmatter = entry.frontmatter
    if not isinstance(frontmatter.get("name"), str) or not isinstance(frontmatter.get("description"), str):
        raise refuse("entry", "has no name and description in its frontmatter")
    if frontmatter["name"] != name or not SKILL_NAME.fullmatch(name):
        raise refuse("entry", f"is named {flatten_text(frontmatter['name'], 64)!r}, not after its path's last segment")
    if isinstance(entry.resources, str):
        if entry.resources != DYNAMIC:
            raise refuse("entry", "lists no files")
        if not allow_dynamic:
            raise refuse("dynamic", "is dynamic (no digests: its content cannot be verified); pass allow_dynamic=True to load it")
        return None
    if len(entry.resources) > MAX_RESOURCES_PER_SKILL:
        raise refuse("limits", f"lists {len(entry.resources)} files, over the limit of {MAX_RESOURCES_PER_SKILL}")
    total = sum(item.size for item in entry.resources)
    if total > MAX_SKILL_BYTES:
        raise refuse("limits", f"adds up to {total} bytes, over the limit of {MAX_SKILL_BYTES}")
    manifest: dict[str, SkillResource] = {}
    normalised: set[tuple[str, ...]] = set()
    for item in entry.resources:
        if item.uri != uri and not item.uri.startswith(root + "/"):
            raise refuse("entry", f"lists {flatten_text(item.uri, 256)}, outside the skill")
        key = file_key(root, item.uri)
        if key is None:
            raise refuse("entry", f"lists {flatten_text(item.uri, 256)}, whose path is not plain segments under the root")
        if item.uri in manifest or key in normalised:
            raise refuse("entry", f"lists {flatten_text(item.uri, 256)} twice")
        normalised.add(key)
        if not _DIGEST.fullmatch(item.digest) or item.size < 0:
            raise refuse("entry", f"gives {flatten_text(item.uri, 256)} a malformed digest or size")
        manifest[item.uri] = item
    if uri not in manifest:
        raise refuse("entry", f"does not list its {SKILL_MD}")
    return manifest


def file_key(root: str, uri: str) -> tuple[str, ...] | None:
    """The path of ``uri`` under ``root`` as its decoded segments, NFC-normalised (what two
    spellings of one file share); None unless it is plain: no empty, ``.`` or ``..``
    segment before or after percent-decoding, no segment decoding to one with ``/`` or
    ``\\``, no ``?`` or ``#``, and what is decoded is UTF-8."""
    if not uri.startswith(root + "/"):
        return None
    rest = uri[len(root) + 1 :]
    if "?" in rest or "#" in rest:
        return None
    key: list[str] = []
    for segment in rest.split("/"):
        try:
            decoded = unquote(segment, errors="strict")
        except UnicodeDecodeError:
            return None
        if segment in ("", ".", "..") or decoded in ("", ".", "..") or "/" in decoded or "\\" in decoded:
            return None
        key.append(unicodedata.normalize("NFC", decoded))
    return tuple(key)


def verify_content(listed: SkillResource, data: bytes) -> None:
    """Raise :class:`SkillVerificationError` unless ``data`` has the length and the
    digest the entry gives the file."""
    shown = flatten_text(listed.uri, 256)
    if len(data) != listed.size:
        raise SkillVerificationError(
            listed.uri, "size", f"{shown} is {len(data)} bytes, not the {listed.size} its entry gives: refused"
        )
    if digest_of(data) != listed.digest:
        raise SkillVerificationError(listed.uri, "digest", f"{shown} does not match the digest of its entry: refused")


def _yaml() -> Any:
    try:
        return importlib.import_module("yaml")
    except ImportError:
        raise ImportError(
            "loading a skill parses its SKILL.md frontmatter with PyYAML, which is not installed: pip install 'mcpkit[skills]'"
        ) from None


_loaders: dict[str, Any] = {}


def _loader() -> Any:
    """PyYAML's safe loader, but with dates left as the strings they were written as
    (the entry's frontmatter is JSON, which has no dates)."""
    loader = _loaders.get("safe")
    if loader is None:
        yaml = _yaml()
        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        made: Any = type("FrontmatterLoader", (base,), {})
        made.yaml_implicit_resolvers = {
            first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
            for first, resolvers in base.yaml_implicit_resolvers.items()
        }
        loader = _loaders["safe"] = made
    return loader


def parse_frontmatter(text: str, uri: str = SKILL_MD) -> tuple[dict[str, Any], str]:
    """A ``SKILL.md``'s YAML frontmatter (between its first two ``---`` lines) and the
    Markdown after it. Raises :class:`SkillVerificationError` (``"frontmatter"``) for a
    file that does not begin with a frontmatter, or whose frontmatter is not a YAML
    mapping; ``ImportError`` without PyYAML."""
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "---":
        raise SkillVerificationError(uri, "frontmatter", f"{flatten_text(uri, 256)} does not begin with a YAML frontmatter")
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if end is None:
        raise SkillVerificationError(uri, "frontmatter", f"the frontmatter of {flatten_text(uri, 256)} is not closed")
    yaml = _yaml()
    shown = flatten_text(uri, 256)
    try:
        value = yaml.load("".join(lines[1:end]), Loader=_loader())
    except yaml.YAMLError as exc:
        reason = flatten_text(str(exc), 256)
        raise SkillVerificationError(uri, "frontmatter", f"the frontmatter of {shown} is not YAML: {reason}") from None
    if not isinstance(value, dict):
        raise SkillVerificationError(uri, "frontmatter", f"the frontmatter of {shown} is not a mapping")
    return value, "".join(lines[end + 1 :])


def compare_frontmatter(parsed: Mapping[Any, Any], entry: Mapping[str, Any], uri: str) -> None:
    """Raise :class:`SkillVerificationError` unless the frontmatter parsed from
    ``SKILL.md`` and the entry's are the same, field by field: the same fields, each
    with the same value (a boolean is not a number; keys that are not strings count as
    their JSON spelling, and two YAML keys with one spelling, ``1`` and ``"1"``, are
    refused)."""
    budget = [_MAX_NODES]
    shown = flatten_text(uri, 256)
    keys = {_key(key) for key in parsed}
    if len(keys) != len(parsed):  # 1 and "1", or null and "null": one JSON key, two YAML ones
        raise SkillVerificationError(
            uri, "frontmatter", f"the frontmatter of {shown} gives one field twice (as two YAML keys): not loaded"
        )
    for field in sorted(keys ^ set(entry)):
        where = "the entry's" if field in entry else f"{SKILL_MD}'s"
        raise SkillVerificationError(
            uri, "frontmatter", f"the frontmatter field {flatten_text(field, 64)!r} of {shown} is only in {where}: not loaded"
        )
    for key, value in parsed.items():
        field = _key(key)
        if not _same(value, entry[field], budget):
            why = f"the frontmatter field {flatten_text(field, 64)!r} of {shown} differs from its entry's: not loaded"
            raise SkillVerificationError(uri, "frontmatter", why)


def _key(key: Any) -> str:
    """A YAML mapping key as JSON spells it."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


def _same(mine: Any, theirs: Any, budget: list[int], depth: int = 0) -> bool:
    """Whether a YAML value and a JSON value are the same value, strictly (False past
    :data:`_MAX_NODES` nodes or :data:`_MAX_DEPTH` levels: aliases can make a frontmatter
    endless)."""
    budget[0] -= 1
    if budget[0] < 0 or depth > _MAX_DEPTH:
        return False
    if isinstance(mine, dict):
        if not isinstance(theirs, dict) or len(mine) != len(theirs) or len({_key(key) for key in mine}) != len(mine):
            return False
        for key, value in mine.items():
            field = _key(key)
            if field not in theirs or not _same(value, theirs[field], budget, depth + 1):
                return False
        return True
    if isinstance(mine, list):
        return (
            isinstance(theirs, list)
            and len(mine) == len(theirs)
            and all(_same(a, b, budget, depth + 1) for a, b in zip(mine, theirs, strict=True))
        )
    if isinstance(mine, bool) or isinstance(theirs, bool):
        return isinstance(mine, bool) and isinstance(theirs, bool) and mine == theirs
    if isinstance(mine, int | float):
        return isinstance(theirs, int | float) and mine == theirs
    if isinstance(mine, str) or mine is None:
        return type(mine) is type(theirs) and mine == theirs
    return False  # bytes, sets, anything JSON cannot hold
