"""A test upstream MCP server that lists its UI tool only to a client declaring MCP Apps (the
``io.modelcontextprotocol/ui`` extension with the ``text/html;profile=mcp-app`` MIME type, as
the SDK's `client_supports_apps` reads it), as the Apps extension asks of a server: a UI-only
tool is not offered to a host that cannot show it.

Run as ``python tests/_harness/upstreams/ui_gated_server.py [--era legacy|modern|dual]``
(stdio). ``plain`` is always listed; ``show_chart`` (UI ``ui://charts/chart.html``) only when the
client of the request (2026-07-28) or of the session (2025-11-25) declared the extension.
"""

from __future__ import annotations

# ruff: noqa: E402
from handoff import hand_off

hand_off()  # under pytest, a fork of its zygote runs this: the imports below are done there

import argparse
import functools
from typing import Any

import anyio
import mcp_types as types
from mcp.server.apps import APP_MIME_TYPE, client_supports_apps
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from serving import serve_stdio

CHART = "ui://charts/chart.html"
Ctx = ServerRequestContext[Any]


def build() -> Server[Any]:
    """The server: ``plain`` always, ``show_chart`` and its UI for an Apps client only."""
    schema = {"type": "object", "properties": {}}
    plain = types.Tool(name="plain", description="Always listed.", input_schema=schema)
    chart = types.Tool(
        name="show_chart",
        description="Draw a chart (the host shows its UI).",
        input_schema=schema,
        _meta={"ui": {"resourceUri": CHART}},
    )

    async def list_tools(ctx: Ctx, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[plain, chart] if client_supports_apps(ctx) else [plain])

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        text = "apps" if client_supports_apps(ctx) else "no apps"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    async def list_resources(ctx: Ctx, params: Any) -> types.ListResourcesResult:
        chart_ui = types.Resource(uri=CHART, name="chart", mime_type=APP_MIME_TYPE)
        return types.ListResourcesResult(resources=[chart_ui])

    async def read_resource(
        ctx: Ctx, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        html = types.TextResourceContents(uri=CHART, mime_type=APP_MIME_TYPE, text="<p>chart</p>")
        return types.ReadResourceResult(contents=[html])

    return Server(
        "ui-gated",
        version="1.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--era", choices=["dual", "legacy", "modern"], default="dual")
    anyio.run(functools.partial(serve_stdio, build(), parser.parse_args().era, guarded=True))


if __name__ == "__main__":
    main()
