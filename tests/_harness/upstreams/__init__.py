"""Upstream MCP servers the tests run (in-process, stdio, HTTP)."""
