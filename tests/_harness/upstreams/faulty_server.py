"""A stdio upstream that fails in the ways a gateway must map: ``reject`` answers with a JSON-RPC
error, ``crash`` kills the server mid-call, ``echo`` works. Both MCP eras (low-level `Server`)."""

from __future__ import annotations

# ruff: noqa: E402
from handoff import hand_off

hand_off()  # under pytest, a fork of its zygote runs this: the imports below are done there

import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

REJECT_CODE = -32042
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"text": {"type": "string"}}}


def build() -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = [types.Tool(name=n, input_schema=SCHEMA) for n in ("echo", "reject", "crash")]
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name == "reject":
            raise MCPError(code=REJECT_CODE, message="rejected by the upstream", data={"why": 1})
        if params.name == "crash":
            os._exit(3)
        text = str((params.arguments or {}).get("text", ""))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("faulty", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def _serve() -> None:
    server = build()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options(NotificationOptions()))


if __name__ == "__main__":
    anyio.run(_serve)
