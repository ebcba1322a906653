"""The server: the :class:`~mcpkit.server.server.Server` facade, its registry, the
dual-era dispatcher, the per-request :class:`~mcpkit.server.context.Context`, schemas
and argument validation, and the request handlers per feature in ``features``.
Never imports ``client``."""
