"""Building a host: many MCP servers as one client (docs/howto/host.md).

* :mod:`.config` — the servers as hosts write them down (``mcpServers``, VS Code's
  ``servers``), with their ``${...}`` references resolved;
* :mod:`.names` — the group-wide names of the servers' tools and prompts, and the table
  that finds the server behind a name;
* :mod:`.member` — one server of a group: its client, its state, its lists kept current;
* :mod:`.group` — :class:`~mcpkit.ClientGroup`, the facade over the members;
* :mod:`.llm` — tools in the formats of the LLM APIs, and the models' calls read back.

A client-side layer: it builds on :mod:`mcpkit.client` and the transports, and nothing
below the command line imports it.
"""
