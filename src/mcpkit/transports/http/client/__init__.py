"""The Streamable HTTP client transport, both eras."""
