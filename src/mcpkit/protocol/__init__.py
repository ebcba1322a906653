"""The protocol, with no I/O: wire types, error codes and the exception-to-error map,
the JSON-RPC engine, framing (newlines, SSE), the version registry and the era
policies, the reserved ``_meta`` keys, the request-header codec, pagination cursors.

Imports nothing else of mcpkit and never asyncio (checked by import-linter).
"""
