"""``python -m mcpkit.cli``: the ``mcpkit`` command, for an environment without its script."""

from .main import main

main()
