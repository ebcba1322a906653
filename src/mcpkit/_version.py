"""The package version, in one place (read by the build and by the client's default identity)."""

#: The version of the mcpkit package.
__version__ = "0.1.0"
