"""The skills a server serves (docs/skills.md): the :class:`SkillCatalog` of a
registry. It keeps the :class:`~.definitions.skills.SkillDef` objects (read from
directories or made in code), offers every file of every skill as an ordinary resource
of the registry (so ``resources/list``, ``resources/read``, subscriptions and mounting
treat them as any other), and answers what the extension's requests ask
(:mod:`.features.skills`): the entries of ``skills/list`` and ``skills/get``, and the
children of a directory for ``resources/directory/read``.

A skill's ``resources`` are every file under its root, so a skill nested in another is
part of the enclosing one's files too; nesting is only allowed among the skills of one
directory (a skill made in code may neither hold nor sit inside another), so that an
entry is always complete. Every change — skills added, removed, a directory read again
— is announced once as a resources list change, and a file whose bytes changed on a
reload as an update of that resource.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from .definitions.skills import SkillDef, SkillFile

from ..protocol.content import Resource, ResourceContents
from ..protocol.skills import DIRECTORY_MIME_TYPE, DYNAMIC, Skill, SkillResource
from .definitions.resources import ResourceDef

__all__ = ["SkillCatalog", "SkillFileResource", "Owner"]

log = logging.getLogger("mcpkit.server")


def _reader(file: SkillFile) -> Callable[[], Any]:
    """What ``resources/read`` of ``file`` calls: its bytes as they were read, or what
    generates them now."""
    from .definitions.skills import generated  # here and below, not at import time: only a server with skills needs it

    generate = file.generate
    if generate is None:
        contents = file.contents()

        async def static() -> ResourceContents:
            return contents

        return static

    async def dynamic() -> ResourceContents:
        value = await generated(generate)
        return file.contents(value.encode() if isinstance(value, str) else value)

    return dynamic


class Owner(Protocol):
    """What the catalog needs of its registry (:class:`~.registry.Registry`)."""

    resources: dict[str, ResourceDef]
    disabled: dict[tuple[str, str], Any]

    def announce(self, kind: str) -> None: ...

    def resource_updated(self, uri: str) -> None: ...


class SkillCatalog:
    """The skills of one registry, and the directories they were read from."""

    def __init__(self, registry: Owner) -> None:
        self._registry = registry
        #: The skills, by the URI of their SKILL.md.
        self.skills: dict[str, SkillDef] = {}
        #: The directories read with :meth:`add_directory`, with their prefix, in order.
        self.directories: list[tuple[Path, str | None]] = []
        #: Whether ``resources/directory/read`` is served (declared as ``directoryRead``).
        self.directory_read = True
        self._entries: dict[str, Skill] | None = None
        self._dirs: dict[str, list[Resource]] | None = None

    def __bool__(self) -> bool:
        return bool(self.skills)

    # --- changing what is served ----------------------------------------------------------------

    def add_directory(self, directory: str | os.PathLike[str], prefix: str | None) -> list[str]:
        """Serve every skill under ``directory`` (and again on :meth:`reload`); their
        URIs. Raises what :func:`load_directory` and :meth:`add` raise."""
        from pathlib import Path  # here, not at import time: only a server with skills directories needs it

        from .definitions.skill_folders import load_directory

        path = Path(directory)
        defs = load_directory(path, prefix)
        self.add(defs)
        self.directories.append((path, prefix))
        return [d.uri for d in defs]

    def add(self, defs: list[SkillDef]) -> None:
        """Serve ``defs`` (one directory's skills, or one made in code). Raises
        ``ValueError`` for a skill or file URI served already, or a skill that would
        hold, or sit inside, a skill served from elsewhere."""
        self._check(defs, self.skills)
        for d in defs:
            self.skills[d.uri] = d
        self._install()

    def remove(self, uri: str) -> None:
        """Stop serving the skill whose SKILL.md is at ``uri`` (the files it shares with
        a skill nested in it stay). Raises ``KeyError`` if there is none."""
        del self.skills[uri]
        self._install()

    def reload(self) -> list[str]:
        """Read every directory of :meth:`add_directory` again and serve what it holds
        now, in place of what it held; the URIs of the skills served from them. Raises
        what :meth:`add_directory` raises, and then nothing changes."""
        from .definitions.skill_folders import load_directory

        fresh = [d for path, prefix in self.directories for d in load_directory(path, prefix)]
        kept = {uri: d for uri, d in self.skills.items() if d.source is None}
        self._check(fresh, kept)
        before = {f.uri: f for d in self.skills.values() for f in d.files}
        self.skills = {**kept, **{d.uri: d for d in fresh}}
        self._install()
        for d in fresh:
            for f in d.files:
                old = before.get(f.uri)
                if old is not None and old.data != f.data:
                    self._registry.resource_updated(f.uri)
        return [d.uri for d in fresh]

    def _check(self, defs: list[SkillDef], served: dict[str, SkillDef]) -> None:
        owned = {f.uri for d in self.skills.values() for f in d.files}
        for d in defs:
            if d.uri in served:
                raise ValueError(f"a skill is served at {d.uri} already")
            for f in d.files:
                taken = f.uri in self._registry.resources or ("resource", f.uri) in self._registry.disabled
                if taken and f.uri not in owned:
                    raise ValueError(f"skill {d.uri}: a resource with URI {f.uri!r} is registered already")
        for i, d in enumerate(defs):
            for other in [*served.values(), *defs[i + 1 :]]:
                # read by one call (the same directory read twice, under two prefixes, is two)
                together = d.origin is not None and d.origin is other.origin
                if not together and (_inside(d.root, other.root) or _inside(other.root, d.root)):
                    raise ValueError(f"skill {d.uri} and skill {other.uri} would nest; only the skills of one directory may nest")

    def _install(self) -> None:
        """Offer the files of the skills as resources (each once: a skill's own SKILL.md
        as that skill describes it), withdraw those of skills no longer served, and
        announce the change."""
        reg = self._registry
        wanted: dict[str, SkillFile] = {}
        for d in self.skills.values():
            wanted[d.files[0].uri] = d.files[0]
        for d in self.skills.values():
            for f in d.files[1:]:
                wanted.setdefault(f.uri, f)
        for uri in [u for u, rd in reg.resources.items() if isinstance(rd, SkillFileResource) and u not in wanted]:
            del reg.resources[uri]
        for uri, f in wanted.items():
            current = reg.resources.get(uri)
            if not (isinstance(current, SkillFileResource) and current.file is f):
                reg.resources[uri] = SkillFileResource(f)
        self._entries = None
        self._dirs = None
        reg.announce("resources")

    # --- what the requests read -----------------------------------------------------------------

    def entries(self) -> list[Skill]:
        """Every skill's entry, by URI."""
        return list(self._entry_map().values())

    def entry(self, uri: str) -> Skill | None:
        """The entry of the skill whose SKILL.md is at ``uri`` (None: no such skill)."""
        return self._entry_map().get(uri)

    def _entry_map(self) -> dict[str, Skill]:
        if self._entries is None:
            self._entries = {uri: self._entry(d) for uri, d in sorted(self.skills.items())}
        return self._entries

    def _entry(self, d: SkillDef) -> Skill:
        if d.dynamic:
            return Skill(uri=d.uri, frontmatter=d.frontmatter, resources=DYNAMIC)
        resources = [SkillResource(uri=f.uri, digest=f.digest, size=len(f.data or b"")) for f in d.files]
        return Skill(uri=d.uri, frontmatter=d.frontmatter, resources=resources)

    def children(self, uri: str) -> list[Resource] | None:
        """The direct children of the directory resource ``uri``, files first then
        subdirectories, each by URI (None: ``uri`` is no directory of a skill)."""
        if self._dirs is None:
            from .definitions.skills import directory_resource

            dirs: dict[str, dict[str, Resource]] = {}
            for d in self.skills.values():
                for directory in d.directories:
                    dirs.setdefault(directory, {})
                for directory in d.directories:
                    parent = directory.rsplit("/", 1)[0]
                    if directory != d.root or parent in dirs:
                        dirs.setdefault(parent, {})[directory] = directory_resource(directory)
                for f in d.files:
                    rd = self._registry.resources.get(f.uri)
                    listed = rd.resource if rd is not None else f.resource
                    dirs[f.uri.rsplit("/", 1)[0]][f.uri] = listed
            self._dirs = {
                directory: sorted(found.values(), key=lambda r: (r.mime_type == DIRECTORY_MIME_TYPE, r.uri))
                for directory, found in dirs.items()
            }
        return self._dirs.get(uri)


class SkillFileResource(ResourceDef):
    """A skill's file as a resource of the registry: removed or hidden only with its
    skill."""

    def __init__(self, file: SkillFile) -> None:
        super().__init__(file.resource, _reader(file))
        self.file = file


def _inside(uri: str, root: str) -> bool:
    return uri.startswith(root + "/")
