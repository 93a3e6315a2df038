"""The stdio face: the same gateway as an MCP server on stdin/stdout (both eras)."""

from __future__ import annotations

import os

from mcp.server.stdio import stdio_server

from gateway.auth import Authenticator
from gateway.downstream import build_server
from gateway.gateway import Gateway
from toolsets.context import ANONYMOUS, Principal
from toolsets.errors import ConfigError, ConfigIssue

__all__ = ["TOKEN_ENV", "serve_stdio", "stdio_principal"]

TOKEN_ENV = "LOCKGATE_TOKEN"


def stdio_principal(gateway: Gateway) -> Principal:
    """The agent on the other end of stdin: from ``$LOCKGATE_TOKEN`` when agents are configured."""
    authenticator = Authenticator(gateway.config.auth)
    if not authenticator.required("agent"):
        return ANONYMOUS
    principal = authenticator.authenticate(os.environ.get(TOKEN_ENV), "agent")
    if principal is None:
        message = f"agents are configured: set ${TOKEN_ENV} to an agent token"
        raise ConfigError([ConfigIssue("", None, None, "auth.agents", message)])
    return principal


async def serve_stdio(gateway: Gateway) -> None:
    """Serve ``gateway`` (already entered) on this process's stdin/stdout until EOF."""
    server = build_server(gateway, transport="stdio", principal=stdio_principal(gateway))
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
    gateway.closing()
