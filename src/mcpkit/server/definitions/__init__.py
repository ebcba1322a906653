"""What is registered: the definitions of tools, prompts, resources and resource
templates, built once at registration from a function (or a raw schema) and its
options, and read by the request handlers in :mod:`mcpkit.server.features`."""
