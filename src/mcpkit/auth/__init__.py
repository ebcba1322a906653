"""Authorization (OAuth 2.1, docs/auth.md) for both sides.

``mcpkit.auth.identity`` holds the verified identity of the request being served;
``mcpkit.auth.server`` and its verifiers protect a Streamable HTTP server (the
resource-server side); ``mcpkit.auth.client`` completes the flows on the client side.
Nothing here is imported by ``import mcpkit``; the JOSE and HTTP libraries load only
when a verifier or a flow is used (the ``auth`` extra).
"""
