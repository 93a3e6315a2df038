"""How the test upstreams serve a low-level MCP ``Server`` on stdio, in either era."""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.models import InitializationOptions
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server

__all__ = ["serve_stdio"]


async def serve_stdio(
    server: Server[Any],
    era: str,
    options: InitializationOptions | None = None,
    *,
    guarded: bool = False,
) -> None:
    """Serve ``server`` on stdin/stdout until the client closes them.

    Args:
        server: The low-level server (an ``MCPServer``'s ``_lowlevel_server``).
        era: ``legacy`` runs the handshake-only loop, which never latches onto 2026-07-28;
            ``modern`` and ``dual`` the server's own loop.
        options: The initialization options (default: the server's own).
        guarded: Refuse the other era's requests (`echo_server.era_guard`) unless ``dual``.
    """
    if guarded and era != "dual":
        from echo_server import era_guard  # echo_server serves with this module

        server.middleware.insert(0, era_guard(era))
    options = options or server.create_initialization_options()
    async with stdio_server() as (read, write):
        if era == "legacy":
            async with server.lifespan(server) as state:
                await serve_loop(server, read, write, lifespan_state=state, init_options=options)
        else:
            await server.run(read, write, options)
