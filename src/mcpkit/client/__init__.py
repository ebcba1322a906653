"""The client: :class:`~mcpkit.client.client.Client`, its options, era negotiation,
and the handling of what the server sends on its own. Never imports ``server``."""
