"""A counting upstream for the approvals end-to-end suite: every execution is one JSON line.

Run as ``python recorder_server.py --log PATH``; serves stdio (both MCP eras). Each tool of
`TOOLS` appends ``{"tool": ..., "arguments": ...}`` to the log *before* it answers, with the
arguments exactly as they arrived on the wire, so a test can count executions and compare
arguments byte for byte. A low-level `Server` is used so nothing parses or fills in defaults.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "upstreams"))
# ruff: noqa: E402
from handoff import hand_off

hand_off()  # under pytest, a fork of its zygote runs this: the imports below are done there

import argparse
import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

TOOLS = (
    "record",
    "record_brief",
    "record_expiring",
    "record_lapse",
    "record_caller",
    "record_denied",
    "record_hidden",
    "record_deferred",
    "record_free",
)
"""Identical tools under names the suite's policy treats differently (see fixtures/policy.yaml)."""

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "value": {"type": "string"},
        "count": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "meta": {"type": "object"},
    },
    "required": ["value"],
    "additionalProperties": False,
}


def build(log: Path) -> Server[Any]:
    """The recorder server, appending one line to ``log`` per executed call."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = [
            types.Tool(name=name, description="Record the value.", input_schema=INPUT_SCHEMA)
            for name in TOOLS
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        line = json.dumps({"tool": params.name, "arguments": params.arguments}, sort_keys=True)
        with log.open("a", encoding="utf-8") as file:
            file.write(line + "\n")
        value = (params.arguments or {}).get("value")
        text = f"recorded {value}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("recorder", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def _serve(log: Path) -> None:
    server = build(log)
    options = server.create_initialization_options(NotificationOptions())
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", type=Path, required=True)
    args = parser.parse_args()
    anyio.run(_serve, args.log)


if __name__ == "__main__":
    main()
