"""The stdio face: the same gateway as an MCP server on stdin/stdout (both eras)."""

from __future__ import annotations

from mcp.server.stdio import stdio_server

from gateway.downstream import build_server
from gateway.gateway import Gateway

__all__ = ["serve_stdio"]


async def serve_stdio(gateway: Gateway) -> None:
    """Serve ``gateway`` (already entered) on this process's stdin/stdout until EOF."""
    server = build_server(gateway, transport="stdio")
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
