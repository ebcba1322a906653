"""Reading a folder of skills (docs/skills.md): :func:`load_directory`, each folder at
any depth that holds a ``SKILL.md`` one :class:`~.skills.SkillDef`.

A directory is read once, into memory, each file once even where skills nest: every
file's bytes are kept, and what is served is those bytes. Reading refuses what could
leak or surprise: hidden files and folders are skipped, a symbolic link whose target lies
outside the innermost skill that holds it is left out (with a warning in the log),
anything but a regular file is left out, entries are opened without following links
(a file swapped for a link while the folder is read is not served), and no read goes
more than a byte past the skill's bounds.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final
from urllib.parse import quote

from ...protocol.skills import MAX_SKILL_BYTES, SKILL_MD
from .skills import (
    SCHEME,
    SEGMENT_SAFE,
    SkillDef,
    SkillFile,
    check_bounds,
    check_description,
    check_name,
    check_prefix,
    file_uri,
    make_file,
    parse_frontmatter,
)

__all__ = ["load_directory"]

log = logging.getLogger("mcpkit.server")


def load_directory(directory: str | os.PathLike[str], prefix: str | None = None) -> list[SkillDef]:
    """Every skill under ``directory``: each folder (at any depth, hidden ones skipped)
    that holds a ``SKILL.md`` is one, served at ``skill://<prefix>/<its path>``; a skill
    inside another is also part of the enclosing skill's files. Each file is read once:
    the folder of a skill that sits inside no other is walked, and a skill nested in it
    takes the files under its own folder from that one walk. Raises ``ValueError`` for a
    directory that does not exist or holds a ``SKILL.md`` itself, a skill whose
    frontmatter is not valid (name not its folder's, no description), or a skill over the
    limits; ``ImportError`` without PyYAML."""
    base = Path(os.fspath(directory))  # a new object: one call's skills share it as their origin
    if not base.is_dir():
        raise ValueError(f"skills directory {str(base)!r} is not a directory")
    segments = check_prefix(prefix)
    if (base / SKILL_MD).is_file():
        raise ValueError(f"skills directory {str(base)!r} holds a SKILL.md itself: pass the folder that contains the skill")
    skills: list[SkillDef] = []
    walked: set[tuple[int, int]] = set()
    for folder in _skill_folders(base):
        try:
            st = folder.stat()
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in walked:  # inside a skill walked already (reached through a link)
            continue
        rel = folder.relative_to(base)
        root = SCHEME + "/".join(_root_segments([*segments, *rel.parts], bool(segments)))
        walk = _walk(folder, f"skill {str(folder)!r}")
        walked |= walk.dirs
        outer = _load_skill(folder, root, rel.parts[-1], walk.files, "")
        skills.append(outer)
        for inner in walk.skills:
            parts = inner.split("/")
            inner_root = root + "/" + "/".join(quote(s, safe=SEGMENT_SAFE) for s in parts)
            skills.append(_load_skill(folder.joinpath(*parts), inner_root, parts[-1], walk.files, inner + "/", outer.files))
    for skill in skills:
        skill.origin = base
    return sorted(skills, key=lambda d: d.source.parts if d.source is not None else ())


def _root_segments(parts: list[str], prefixed: bool) -> list[str]:
    """The URI segments of a skill's root: each percent-encoded; the first, which a URI
    reads as its authority, with ``@`` encoded too when it comes from a folder's name (a
    prefix has none: :func:`check_prefix`), so that no folder reads as userinfo."""
    out = [quote(s, safe=SEGMENT_SAFE) for s in parts]
    if not prefixed and parts:
        out[0] = quote(parts[0], safe=SEGMENT_SAFE.replace("@", ""))
    return out


def _skill_folders(base: Path) -> Iterator[Path]:
    """The folders under ``base`` that hold a ``SKILL.md`` and sit inside no other such
    folder, in a fixed order: hidden folders, links out of ``base`` and folders reached
    twice (through a link) skipped. (The skills nested in them are found by :func:`_walk`.)"""
    real_base = base.resolve()
    seen: set[Path] = set()
    stack = [base]
    while stack:
        folder = stack.pop()
        real = _resolved(folder)
        if real is None or real in seen:
            continue
        seen.add(real)
        if folder != base and (folder / SKILL_MD).is_file():
            yield folder
            continue
        with os.scandir(folder) as entries:
            listed = sorted(entries, key=lambda e: e.name, reverse=True)  # popped in name order
        for entry in listed:
            if entry.name.startswith(".") or not _is_dir(entry):
                continue
            path = Path(entry.path)
            if not _utf8(entry.name):
                log.warning("skills: %r has a name that is not UTF-8: not served", path)
                continue
            if entry.is_symlink():
                target = _resolved(path)
                if target is None or not target.is_relative_to(real_base):
                    log.warning("skills: %s links outside %s: not served", path, base)
                    continue
            stack.append(path)


def _resolved(path: Path) -> Path | None:
    """``path`` with every link followed; None for a loop of links."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a loop, before Python 3.13
        return None


def _utf8(name: str) -> bool:
    """Whether a file name (as the OS gave it, undecodable bytes escaped) is UTF-8."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=True)
    except OSError:
        return False


def _load_skill(
    folder: Path,
    root: str,
    dirname: str,
    found: list[tuple[str, bytes]],
    under: str,
    shared: list[SkillFile] | None = None,
) -> SkillDef:
    """The skill in ``folder`` from the files one walk read (``found``, relative to the
    walked folder): those under ``under``. A nested skill (``shared``: the enclosing
    skill's files) takes the enclosing skill's very objects for its supporting files."""
    where = f"skill {str(folder)!r}"
    mine = [(relpath[len(under) :], data) for relpath, data in found if relpath.startswith(under)]
    skill_md = dict(mine).get(SKILL_MD)
    if skill_md is None:  # only a link out of the folder or a non-file can be missing
        raise ValueError(f"{where}: SKILL.md is not a regular file inside the skill's folder")
    try:
        text = skill_md.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{where}: SKILL.md is not UTF-8") from None
    fm = parse_frontmatter(text, where)
    name = check_name(fm.get("name"), where)
    if name != dirname:
        raise ValueError(f"{where}: the frontmatter name {name!r} must be the skill folder's name {dirname!r}")
    check_description(fm.get("description"), where)
    files = [make_file(root, SKILL_MD, skill_md, None, fm)]
    by_uri = {f.uri: f for f in shared or []}
    for relpath, data in sorted(mine):
        if relpath != SKILL_MD:
            uri = file_uri(root, relpath)
            files.append(by_uri.get(uri) or make_file(root, relpath, data, None, fm))
    return SkillDef(uri=root + "/" + SKILL_MD, root=root, frontmatter=fm, files=files, source=folder)


@dataclass
class _Walk:
    """What one walk of a skill's folder found: every file (relative path, bytes), the
    folders of the skills nested in it (relative paths), and the folders walked."""

    files: list[tuple[str, bytes]] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    dirs: set[tuple[int, int]] = field(default_factory=set)
    count: int = 0
    total: int = 0


#: How deep a skill's folders are walked (each level holds a directory open).
_MAX_DEPTH: Final = 64
_OPEN: Final = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)


def _walk(folder: Path, where: str) -> _Walk:
    """Read every file of the skill in ``folder``, and of the skills nested in it, once.
    Hidden entries and anything but regular files and folders are skipped, and so is a
    link whose target lies outside the innermost skill holding it (it is then in no
    skill's files). Entries are opened relative to their folder's descriptor without
    following links (a link is opened only once its target is found inside the skill,
    and kept only if what was opened is that target), and each file is checked on its
    descriptor to be a regular one. Raises ``ValueError`` once the skill is over the
    limits: before a file larger than what the skill has left is read, and after
    reading at most one byte past it (a file that grew, or whose size the OS does not
    tell)."""
    walk = _Walk()
    try:
        fd = os.open(folder, _OPEN)
    except OSError:
        raise ValueError(f"{where}: the skill's folder cannot be read") from None
    try:
        _walk_dir(walk, fd, folder, "", folder, _resolved(folder) or folder, where, 0)
    finally:
        os.close(fd)
    return walk


def _walk_dir(walk: _Walk, dfd: int, path: Path, rel: str, skill_dir: Path, skill_real: Path, where: str, depth: int) -> None:
    st = os.fstat(dfd)
    if (st.st_dev, st.st_ino) in walk.dirs:
        return
    walk.dirs.add((st.st_dev, st.st_ino))
    with os.scandir(dfd) as entries:
        listed = sorted(((e.name, e.is_symlink()) for e in entries), key=lambda e: e[0])
    if rel and any(name == SKILL_MD for name, _ in listed) and _is_file_at(dfd, SKILL_MD):  # a skill nested in this one
        walk.skills.append(rel.rstrip("/"))
        skill_dir, skill_real = path, _resolved(path) or path
    for name, is_link in listed:
        if name.startswith("."):
            continue
        epath = path / name
        if not _utf8(name):
            log.warning("skills: %r has a name that is not UTF-8: not served", epath)
            continue
        relpath = f"{rel}{name}"
        fd = _open_entry(dfd, name, epath, is_link, skill_dir, skill_real)
        if fd is None:
            continue
        try:
            est = os.fstat(fd)
            if stat.S_ISDIR(est.st_mode):
                if depth >= _MAX_DEPTH:
                    log.warning("skills: %s is more than %d folders deep: not served", epath, _MAX_DEPTH)
                    continue
                _walk_dir(walk, fd, epath, relpath + "/", skill_dir, skill_real, where, depth + 1)
                continue
            if not stat.S_ISREG(est.st_mode):
                log.warning("skills: %s is not a regular file: not served", epath)
                continue
            walk.count += 1
            left = MAX_SKILL_BYTES - walk.total
            check_bounds(where, walk.count, walk.total + est.st_size)
            data = _read_at_most(fd, left + 1)
            walk.total += len(data)
            check_bounds(where, walk.count, walk.total)
            walk.files.append((relpath, data))
        finally:
            os.close(fd)


def _is_file_at(dfd: int, name: str) -> bool:
    """Whether ``name`` in the folder open as ``dfd`` is a regular file (links followed)."""
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=dfd).st_mode)
    except OSError:
        return False


def _open_entry(dfd: int, name: str, epath: Path, is_link: bool, skill_dir: Path, skill_real: Path) -> int | None:
    """A descriptor of the entry ``name`` of the folder open as ``dfd`` (None: not
    served). A link is followed only to a target inside the skill's folder."""
    try:
        if not is_link:
            return os.open(name, _OPEN | _NOFOLLOW, dir_fd=dfd)  # a link swapped in fails (ELOOP)
        target = _resolved(epath)
        if target is None or not target.is_relative_to(skill_real):
            log.warning("skills: %s links outside its skill's folder %s: not served", epath, skill_dir)
            return None
        expected = os.stat(target, follow_symlinks=False)
        fd = os.open(name, _OPEN, dir_fd=dfd)
        got = os.fstat(fd)
        if (got.st_dev, got.st_ino) != (expected.st_dev, expected.st_ino):  # the link changed meanwhile
            os.close(fd)
            log.warning("skills: %s changed while it was read: not served", epath)
            return None
        return fd
    except OSError:
        log.warning("skills: %s cannot be read: not served", epath)
        return None


def _read_at_most(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes of the file open as ``fd`` (fewer at its end)."""
    chunks: list[bytes] = []
    got = 0
    while got < limit:
        chunk = os.read(fd, min(limit - got, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)
