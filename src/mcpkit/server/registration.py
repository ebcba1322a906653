"""The registration API of :class:`~mcpkit.Server`: the decorators and methods that
add, remove, hide and bring back tools, resources, templates, prompts, completions and
middleware. :class:`Registration` is the facade's base class (:mod:`.server`): it owns
what is registered (the :class:`~.registry.Registry`) and the types handlers may ask
for by annotation; describing a function as a tool, prompt or resource is the work of
:mod:`.definitions`, which each registration hands its options.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

if TYPE_CHECKING:
    from pathlib import Path

    from .definitions.skills import ContentFunction
    from .transform import ArgTransform, Wrapper

from ..protocol.apps import UI_MIME_TYPE, UiCsp, UiPermissions
from ..protocol.types import Icon, ToolAnnotations
from .apps import check_ui_uri, is_ui_resource, tool_meta_with_ui, ui_resource_meta
from .definitions.options import ToolOptions, task_mode
from .definitions.prompts import PromptDef
from .definitions.resources import TemplateDef, resource_from_function
from .definitions.tools import tool_from_function, tool_from_schema
from .filters import with_tags
from .injection import Provider, callable_name
from .registry import Middleware, Registry

__all__ = ["Registration"]

F = TypeVar("F", bound=Callable[..., Any])


class Registration:
    """What a server offers, and how it changes: registering, removing, hiding and
    bringing back features. ``registry`` keeps them; ``providers`` are the types their
    handlers may ask for besides the ``Context`` (docs/lifespan.md)."""

    def __init__(self, registry: Registry, providers: dict[type, Provider]) -> None:
        self._registry = registry
        self._providers = providers

    def _add_scopes(self, kind: str, key: str, scopes: Sequence[str]) -> None:
        if isinstance(scopes, str):
            raise TypeError("scopes must be a sequence of scope names, not one string")
        if scopes:
            self._registry.scopes[(kind, key)] = tuple(scopes)

    # --- changing what is offered while serving (docs/subscriptions.md) -------------------

    def remove_tool(self, name: str) -> None:
        """Remove a tool; connected clients are told its list changed. ``KeyError`` if
        there is none."""
        self._registry.remove("tool", name)

    def remove_resource(self, uri: str) -> None:
        """Remove a resource, or a template given its URI template. ``KeyError`` if there
        is none."""
        kind = "template" if "{" in uri else "resource"
        self._registry.remove(kind, uri)

    def remove_prompt(self, name: str) -> None:
        """Remove a prompt. ``KeyError`` if there is none."""
        self._registry.remove("prompt", name)

    def disable(self, kind: Literal["tool", "resource", "template", "prompt"], key: str) -> None:
        """Hide a tool, resource, template or prompt: it leaves its list (clients are told)
        and calls to it fail as for an unknown one, until :meth:`~Server.enable`. ``KeyError`` if
        there is none, ``ValueError`` for an unknown kind."""
        self._registry.set_enabled(kind, key, False)

    def enable(self, kind: Literal["tool", "resource", "template", "prompt"], key: str) -> None:
        """Bring back what :meth:`~Server.disable` hid (clients are told)."""
        self._registry.set_enabled(kind, key, True)

    # --- registration --------------------------------------------------------------------

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(
        self,
        fn: str | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Sequence[str] = (),
        tags: Sequence[str] = (),
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        timeout: float | None = None,
        task: bool | Literal["optional", "required", "deferred"] = False,
        ui: str | None = None,
        visibility: Sequence[Literal["model", "app"]] | None = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: F | str | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Sequence[str] = (),
        tags: Sequence[str] = (),
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        timeout: float | None = None,
        task: bool | Literal["optional", "required", "deferred"] = False,
        ui: str | None = None,
        visibility: Sequence[Literal["model", "app"]] | None = None,
    ) -> F | Callable[[F], F]:
        """Register a function as a tool (``@server.tool``, ``@server.tool(...)``, or
        ``@server.tool("name", ...)``: a name given first is ``name``).

        ``timeout`` (seconds) cancels a call that runs longer, answering it with a tool
        error that says so (default: ``Server(tool_timeout=...)``, else no limit); a
        plain ``def`` tool cannot be interrupted — its thread runs on and its result is
        dropped. ``scopes`` are the OAuth scopes a caller needs over protected HTTP
        (docs/auth.md). ``tags`` are words a server mounting this one (or a proxy in
        front of it) selects features by; they are listed in the tool's ``_meta``
        (:mod:`mcpkit.server.filters`).

        ``task=True`` runs each call as a task (docs/tasks.md) when the client declared
        the tasks extension: the call is answered at once with the task's handle and the
        tool goes on in the background (a plain call for other clients);
        ``task="required"`` refuses other clients with -32021; ``task="deferred"`` makes
        the call a task when the handler calls ``await ctx.start_task()``.

        Raises ``TypeError`` if the signature cannot be described as JSON Schema and
        ``ValueError`` if a tool of that name exists, ``timeout`` is not positive or
        ``task`` is not one of those values.

        ``ui`` links the tool to a view (docs/apps.md): the ``ui://`` URI of a resource
        registered before with :meth:`~Server.ui_resource` or :meth:`~Server.add_ui`
        (``ValueError`` if there is none); ``visibility`` says who may use the tool,
        ``["model"]``, ``["app"]`` (only the server's views: hosts leave it out of the
        model's tool list) or both (the default).
        """
        if isinstance(fn, str):
            name = _one_name(fn, name)
            fn = None
        options = ToolOptions(
            name=name,
            title=title,
            description=description,
            annotations=annotations,
            structured_output=structured_output,
            meta=with_tags(tool_meta_with_ui(meta, ui, visibility), tags),
            icons=icons,
            timeout=timeout,
            task=task_mode(task),
        )

        def register(f: F) -> F:
            self._check_view(ui, name or callable_name(f))
            td = tool_from_function(f, options, self._providers)
            self._add_scopes("tool", td.name, scopes)
            self._registry.add_tool(td)
            return f

        return register(fn) if fn is not None else register

    def add_tool(
        self,
        name: str,
        description: str | None,
        input_schema: Mapping[str, Any],
        handler: Callable[..., Any],
        *,
        title: str | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: ToolAnnotations | Mapping[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Sequence[str] = (),
        tags: Sequence[str] = (),
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        timeout: float | None = None,
        task: bool | Literal["optional", "required", "deferred"] = False,
        ui: str | None = None,
        visibility: Sequence[Literal["model", "app"]] | None = None,
    ) -> None:
        """Register a tool from a raw JSON Schema (2020-12 unless ``$schema`` says
        otherwise). ``handler(arguments)`` or ``handler(arguments, ctx)`` receives the
        validated arguments dict; ``task``, ``tags``, ``ui`` and ``visibility`` as for
        :meth:`~Server.tool`. Raises ``ValueError`` for an invalid schema or a duplicate name."""
        self._check_view(ui, name)
        options = ToolOptions(
            name=name,
            title=title,
            description=description,
            annotations=annotations,
            output_schema=output_schema,
            meta=with_tags(tool_meta_with_ui(meta, ui, visibility), tags),
            icons=icons,
            timeout=timeout,
            task=task_mode(task),
        )
        td = tool_from_schema(input_schema, handler, options)
        self._add_scopes("tool", name, scopes)
        self._registry.add_tool(td)

    def transform_tool(
        self,
        source: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        args: Mapping[str, ArgTransform] | None = None,
        wrap: Wrapper | None = None,
        tags: Sequence[str] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        """Offer the tool ``source`` — this server's own, a mounted server's (by the name
        it has here) or a proxied one — transformed, in its place: under ``name``, with
        another ``title``, ``description``, ``tags`` or ``_meta``, its arguments changed
        as ``args`` says (by the source's argument names: :class:`ArgTransform` renames,
        describes, gives a default, hides with a fixed value), and ``wrap``, an
        ``async def wrap(arguments, forward, ctx)``, around its calls
        (docs/howto/compose.md). The source's own name is no longer offered; clients
        are told the tool list changed.

        Raises ``ValueError`` if ``source`` is transformed already, another
        transformation is named ``name``, or ``source`` is offered now and the
        transformation does not fit it (an unknown argument, a hidden required argument
        without a default, a default its schema refuses, a rename in a schema that names
        properties otherwise); ``TypeError`` for a ``wrap`` that is not async or an
        ``args`` value that is not an ``ArgTransform``. A source offered later (a proxy's
        upstream) is checked when it appears, and the transformed tool is left out
        (logged) if it does not fit."""
        from .transform import ToolTransform  # here, not at import time: only a server that transforms a tool needs it

        transform = ToolTransform(
            source, name=name, title=title, description=description, args=args, wrap=wrap, tags=tags, meta=meta
        )
        self._registry.add_transform(transform)

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Sequence[str] = (),
        tags: Sequence[str] = (),
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
    ) -> Callable[[F], F]:
        """Register a resource; a ``uri`` with ``{placeholders}`` registers an RFC 6570
        resource template whose variables are passed as keyword arguments.

        The handler returns ``str`` (text), ``bytes`` (binary), ``ResourceContents`` or
        a list of them, or any JSON-able value (sent as JSON text). ``scopes`` and
        ``tags`` as for :meth:`~Server.tool`.
        """

        def register(fn: F) -> F:
            self._register_resource(uri, fn, name, title, description, mime_type, size, meta, scopes, tags, icons)
            return fn

        return register

    def _register_resource(
        self,
        uri: str,
        fn: Callable[..., Any],
        name: str | None,
        title: str | None,
        description: str | None,
        mime_type: str | None,
        size: int | None,
        meta: dict[str, Any] | None,
        scopes: Sequence[str],
        tags: Sequence[str],
        icons: Sequence[Icon | Mapping[str, Any]] | None,
        contents_meta: dict[str, Any] | None = None,
    ) -> None:
        """What :meth:`resource` and :meth:`ui_resource` register: the resource (or the
        template, for a ``uri`` with placeholders) of ``fn``; ``contents_meta`` is the
        ``_meta`` of what it reads (a view's ``ui``)."""
        self._add_scopes("resource", uri, scopes)
        definition = resource_from_function(
            uri,
            fn,
            name=name,
            title=title,
            description=description,
            mime_type=mime_type,
            size=size,
            meta=with_tags(meta, tags),
            icons=icons,
            providers=self._providers,
        )
        if isinstance(definition, TemplateDef):
            self._registry.add_template(definition)
        else:
            definition.contents_meta = contents_meta
            self._registry.add_resource(definition)

    def ui_resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        csp: UiCsp | Mapping[str, Sequence[str]] | None = None,
        permissions: UiPermissions | Iterable[str] | None = None,
        domain: str | None = None,
        prefers_border: bool | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Sequence[str] = (),
        tags: Sequence[str] = (),
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
    ) -> Callable[[F], F]:
        """Register a view of the MCP Apps extension (docs/apps.md): a resource at the
        ``ui://`` ``uri`` whose handler returns the HTML page a host renders, served as
        ``text/html;profile=mcp-app``. The server declares the extension from then on.

        ``csp`` lists the origins the page needs, by kind (``connectDomains``,
        ``resourceDomains``, ``frameDomains``, ``baseUriDomains``; none: the host's
        restrictive default); ``permissions`` the browser features it asks for
        (``"camera"``, ``"microphone"``, ``"geolocation"``, ``"clipboardWrite"``);
        ``domain`` a dedicated sandbox origin (its format is the host's);
        ``prefers_border`` whether the host should frame it. They are the ``_meta.ui``
        of the listing and of the contents read. ``scopes``, ``tags`` as for
        :meth:`~Server.tool`. Raises ``ValueError`` for a URI that is not a fixed
        ``ui://`` URI, a duplicate one, an unknown CSP field or permission."""
        check_ui_uri(uri)
        ui_meta = ui_resource_meta(csp=csp, permissions=permissions, domain=domain, prefers_border=prefers_border)
        if meta is not None and "ui" in meta:
            raise ValueError("give the view's _meta.ui with csp=, permissions=, domain= and prefers_border=, not in meta")
        listed = {**(meta or {}), "ui": ui_meta} if ui_meta is not None else meta
        contents_meta = {"ui": ui_meta} if ui_meta is not None else None

        def register(fn: F) -> F:  # a ui:// URI has no placeholders: a resource, never a template
            args = (name, title, description, UI_MIME_TYPE, None, listed, scopes, tags, icons, contents_meta)
            self._register_resource(uri, fn, *args)
            return fn

        return register

    def add_ui(
        self,
        uri: str,
        html: str | Path,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        csp: UiCsp | Mapping[str, Sequence[str]] | None = None,
        permissions: UiPermissions | Iterable[str] | None = None,
        domain: str | None = None,
        prefers_border: bool | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Sequence[str] = (),
        tags: Sequence[str] = (),
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
    ) -> None:
        """Register a view whose page is ``html``: the page itself, or a ``Path`` read
        (UTF-8) at each ``resources/read``. Options and errors as for
        :meth:`~Server.ui_resource`; the name defaults to the URI's last segment."""
        page = html

        def read() -> str:
            from pathlib import Path  # here, not at import time: a program with a Path page has imported it

            return page.read_text(encoding="utf-8") if isinstance(page, Path) else page

        default_name = uri[len("ui://") :].rstrip("/").rsplit("/", 1)[-1] or uri
        register = self.ui_resource(
            uri,
            name=name or default_name,
            title=title,
            description=description,
            csp=csp,
            permissions=permissions,
            domain=domain,
            prefers_border=prefers_border,
            meta=meta,
            scopes=scopes,
            tags=tags,
            icons=icons,
        )
        register(read)

    def _check_view(self, ui: str | None, tool: str) -> None:
        """Raises ``ValueError`` unless ``ui`` (when given) is a view registered here."""
        if ui is None:
            return
        check_ui_uri(ui)
        registry = self._registry
        found = registry.resources.get(ui) or registry.disabled.get(("resource", ui))
        label = f"tool {tool!r}"
        if found is None:
            raise ValueError(
                f"{label} links to the UI resource {ui!r}, which is not registered:"
                " register it first (server.ui_resource or server.add_ui)"
            )
        if not is_ui_resource(found.resource):
            raise ValueError(f"{label} links to {ui!r}, which is not served as {UI_MIME_TYPE}")

    @overload
    def prompt(self, fn: F, /) -> F: ...

    @overload
    def prompt(
        self,
        fn: str | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Sequence[str] = (),
        tags: Sequence[str] = (),
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
    ) -> Callable[[F], F]: ...

    def prompt(
        self,
        fn: F | str | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        meta: dict[str, Any] | None = None,
        scopes: Sequence[str] = (),
        tags: Sequence[str] = (),
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
    ) -> F | Callable[[F], F]:
        """Register a prompt (``@server.prompt``, ``@server.prompt(...)``, or
        ``@server.prompt("name", ...)``). Its arguments are the function's parameters
        (strings); it returns a string (one user message), messages, or a
        ``GetPromptResult``. ``scopes`` and ``tags`` as for :meth:`~Server.tool`. Raises
        ``ValueError`` for a duplicate name, ``TypeError`` for a name given twice."""
        if isinstance(fn, str):
            name = _one_name(fn, name)
            fn = None

        def register(f: F) -> F:
            self._add_scopes("prompt", name or callable_name(f), scopes)
            tagged = with_tags(meta, tags)
            pd = PromptDef(
                f, name=name, title=title, description=description, meta=tagged, icons=icons, providers=self._providers
            )
            self._registry.add_prompt(pd)
            return f

        return register(fn) if fn is not None else register

    def completion(self, *, prompt: str | None = None, resource_template: str | None = None) -> Callable[[F], F]:
        """Register argument completion for a prompt or a resource template:
        ``handler(argument, value, context_arguments)`` returns a list of strings or a
        ``Completion``."""
        if (prompt is None) == (resource_template is None):
            raise ValueError("give exactly one of prompt= or resource_template=")
        key = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", resource_template or "")

        def register(fn: F) -> F:
            self._registry.completions[key] = fn
            return fn

        return register

    # --- skills (docs/skills.md) --------------------------------------------------------

    def add_skills(self, directory: str | os.PathLike[str], *, prefix: str | None = None) -> list[str]:
        """Serve every skill under ``directory``: each folder in it, at any depth, that
        holds a ``SKILL.md`` (whose frontmatter names the folder and describes it) is one,
        every file of it a resource at ``skill://[prefix/]<folder path>/<file path>``.
        The files are read now, into memory, and again on :meth:`reload_skills`; hidden
        files, links out of a skill's folder and special files are left out. Returns the
        URIs of the skills' ``SKILL.md``.

        Raises ``ImportError`` without PyYAML (``pip install 'mcpkit[skills]'``),
        ``ValueError`` for a missing directory, a skill whose frontmatter is invalid (no
        description, a name that is not its folder's or breaks the naming rules,
        values JSON cannot carry), a skill over 512 files or 16 MiB (docs/limits.md),
        or a URI served already."""
        return self._registry.skills.add_directory(directory, prefix)

    def add_skill(
        self,
        name: str,
        description: str,
        instructions: str | ContentFunction = "",
        *,
        files: Mapping[str, str | bytes | ContentFunction] | None = None,
        frontmatter: Mapping[str, Any] | None = None,
        prefix: str | None = None,
    ) -> str:
        """Serve a skill made in code, at ``skill://[prefix/]<name>/SKILL.md``: its
        ``SKILL.md`` is the frontmatter (``name``, ``description`` and the other fields of
        ``frontmatter``) followed by ``instructions``; ``files`` are its other files, by
        path relative to the skill (``"references/guide.md"``), as text or bytes.

        A callable, sync or async and taking no arguments, in place of ``instructions``
        or of a file makes the skill dynamic: its content is generated on each read, its
        entry says ``"resources": "dynamic"`` (no digests to publish). Returns the URI of
        its ``SKILL.md``.

        Raises ``ValueError`` for a name that breaks the naming rules, an empty
        description, a prefix or path that is not plain relative segments, frontmatter
        JSON cannot carry, a skill over the limits, a URI served already, or a skill
        that would hold another or sit inside one."""
        from .definitions.skills import skill_from_code  # here, not at import time: only a server with skills needs it

        definition = skill_from_code(name, description, instructions, files=files, frontmatter=frontmatter, prefix=prefix)
        self._registry.skills.add([definition])
        return definition.uri

    def remove_skill(self, uri: str) -> None:
        """Stop serving the skill whose ``SKILL.md`` is at ``uri`` (its files leave the
        resources, clients are told). A skill read from a directory is withdrawn until
        the next :meth:`reload_skills`, which reads it again. ``KeyError`` if there is
        none."""
        self._registry.skills.remove(uri)

    def reload_skills(self) -> list[str]:
        """Read every directory given to :meth:`add_skills` again and serve what they
        hold now: skills added, removed or changed there are served so, clients are told
        the resource list changed and subscribers of a file whose bytes changed that it
        was updated. Returns the URIs of the skills read. Raises what :meth:`add_skills`
        raises, and then what is served does not change."""
        return self._registry.skills.reload()

    @property
    def directory_read(self) -> bool:
        """Whether ``resources/directory/read`` is served for the skills' directories
        and declared (``directoryRead``); default True."""
        return self._registry.skills.directory_read

    @directory_read.setter
    def directory_read(self, value: bool) -> None:
        self._registry.skills.directory_read = bool(value)

    def use(self, middleware: Middleware) -> Middleware:
        """Add middleware ``async def mw(ctx, call_next)``; the first added is the
        outermost. Returns it, so it also works as a decorator."""
        self._registry.middleware.append(middleware)
        return middleware


def _one_name(positional: str, keyword: str | None) -> str:
    """The name of ``@server.tool("name")``. Raises ``TypeError`` if ``name=`` is given
    too."""
    if keyword is not None:
        raise TypeError("give the name once: positionally or as name=, not both")
    return positional
