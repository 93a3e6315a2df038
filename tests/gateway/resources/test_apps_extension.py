"""The gateway's upstream client declares MCP Apps (``io.modelcontextprotocol/ui`` with the
``text/html;profile=mcp-app`` MIME type) in both upstream eras, since it passes UI links and
resources through: an upstream that offers its UI tools only to a client declaring the
extension offers them through the gateway. The control: the same server, asked directly by a
client that declares nothing, lists no UI tool."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from apps_support import direct_client
from gateway_faces import HTTP_FACES, open_face, text_of
from paths import HARNESS
from support import write_config
from surface_support import STARTUP_WAIT

UI_GATED = str(HARNESS / "upstreams" / "ui_gated_server.py")


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_an_upstream_that_checks_for_mcp_apps_lists_its_ui_tool_through_the_gateway(
    tmp_path: Path, era: str
) -> None:
    server = {"name": "ui", "command": sys.executable, "args": [UI_GATED, "--era", era]}
    config = write_config(tmp_path, [server], startup_wait=STARTUP_WAIT)
    face = HTTP_FACES[0].values[0]
    with anyio.fail_after(90):
        async with direct_client([sys.executable, UI_GATED, "--era", era]) as plain:
            direct = {tool.name for tool in (await plain.list_tools()).tools}
        async with open_face(face, config) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            answer = await client.call_tool("ui__plain", {})
    assert direct == {"plain"}
    assert set(listed) == {"ui__plain", "ui__show_chart"}
    assert (listed["ui__show_chart"].meta or {})["ui"]["resourceUri"] == "ui://ui/charts/chart.html"
    assert text_of(answer) == "apps"
