"""The ``mcpkit`` command line (docs/cli.md). Needs the ``cli`` extra (click, rich);
nothing here is imported by ``import mcpkit`` or by the library's own modules."""
