"""The ``mcpkit`` command line.

Empty until its issue lands; listed so that the layering rules already cover it.
"""
