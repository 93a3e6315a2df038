"""MCP Apps through the gateway: a tool's UI resource (``_meta.ui.resourceUri``, and the flat
``ui/resourceUri`` of early servers) served under the server's prefix as ``ui://{prefix}/...``,
the UI read with its MIME type and CSP metadata intact, policy over UI resources like any other,
on every face and era. Real upstreams: an app made with the MCP SDK, and the published
``@modelcontextprotocol/server-basic-vanillajs`` example from the npm registry.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from apps_support import ADMIN, APP_MIME, APPS_SERVER, CHART, REPORT, direct_client
from mcp import Client
from npm_support import NODE, npm_package
from support import write_config
from surface_support import STARTUP_WAIT, Heard, refused

from gateway.mcp.errors import REFUSED

BASIC = "@modelcontextprotocol/server-basic-vanillajs@2.0.3"
CLOCK_UI = "ui://get-time/mcp-app.html"
POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - id: no-admin-ui
    resources: ["ui://charts/admin.html"]
    effect: deny
    message: The admin UI is not for agents.
  - id: no-report-ui
    resources: ["ui://charts/report.html"]
    effect: hide
"""

Watched = tuple[Client, Heard]


@pytest.fixture(scope="module")
def basic_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The published MCP Apps example's entry point (serves stdio with ``--stdio``)."""
    return npm_package(tmp_path_factory, BASIC) / "dist" / "index.js"


@pytest.fixture(scope="module")
def surface_config(tmp_path_factory: pytest.TempPathFactory, basic_app: Path) -> Path:
    """The SDK app (``apps``) and the npm example (``clock``), with a policy denying one UI
    and hiding another."""
    directory = tmp_path_factory.mktemp("apps")
    policy = directory / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    clock = [str(basic_app), "--stdio"]
    servers = [
        {"name": "apps", "transport": "stdio", "command": sys.executable, "args": [APPS_SERVER]},
        {"name": "clock", "transport": "stdio", "command": NODE, "args": clock},
    ]
    policies = {"files": [str(policy)]}
    return write_config(directory, servers, policies=policies, startup_wait=STARTUP_WAIT)


def served(uri: str, prefix: str) -> str:
    """The gateway's form of an upstream's ``ui://`` URI."""
    return f"ui://{prefix}/{uri.removeprefix('ui://')}"


async def test_an_app_tools_ui_link_is_served_under_its_servers_prefix(watched: Watched) -> None:
    client, _ = watched

    tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    chart, clock = tools["apps__show_chart"].meta, tools["clock__get-time"].meta
    assert chart is not None
    assert clock is not None
    assert chart["ui"] == {"resourceUri": served(CHART, "apps")}
    assert chart["ui/resourceUri"] == served(CHART, "apps")
    assert clock["ui"]["resourceUri"] == served(CLOCK_UI, "clock")


async def test_a_ui_resource_reads_through_the_gateway_as_its_upstream_serves_it(
    watched: Watched, basic_app: Path
) -> None:
    client, _ = watched
    upstreams = [
        ("apps", CHART, [sys.executable, APPS_SERVER]),
        ("clock", CLOCK_UI, [NODE, str(basic_app), "--stdio"]),
    ]
    for prefix, uri, command in upstreams:
        async with direct_client(command) as upstream:
            own = _contents(await upstream.read_resource(uri))
        got = _contents(await client.read_resource(served(uri, prefix)))

        assert got == [{**own[0], "uri": served(uri, prefix)}]
        assert got[0]["mimeType"] == APP_MIME


async def test_ui_resources_are_listed_with_their_csp_metadata(watched: Watched) -> None:
    client, _ = watched

    listed = {r.uri: r for r in (await client.list_resources()).resources}

    chart = listed[served(CHART, "apps")]
    assert chart.mime_type == APP_MIME
    assert chart.meta is not None
    assert chart.meta["ui"]["csp"]["connectDomains"] == ["https://api.example.com"]
    assert served(CLOCK_UI, "clock") in listed


async def test_a_policy_denies_a_ui_resource_like_any_other(watched: Watched) -> None:
    client, _ = watched

    error = await refused(client.read_resource(served(ADMIN, "apps")))

    assert (error.code, error.message) == (REFUSED, "The admin UI is not for agents.")
    assert error.data is not None
    assert error.data["lockgate/decision"]["rule_id"] == "no-admin-ui"


async def test_a_hidden_ui_resource_is_unlisted_and_reads_as_one_its_server_lacks(
    watched: Watched,
) -> None:
    """``hide`` on a UI resource works as on any resource. The tool linking it stays listed
    with its link as served: tools are decided by tool rules, and the link is part of the
    tool's definition its pin covers; reading the link answers as for a UI the server lacks,
    so the host shows no UI and the tool's text result stands."""
    client, _ = watched
    hidden, missing = served(REPORT, "apps"), served("ui://charts/nope.html", "apps")

    listed = [r.uri for r in (await client.list_resources()).resources]
    unseen = await refused(client.read_resource(hidden))
    absent = await refused(client.read_resource(missing))
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    result = await client.call_tool("apps__show_report", {"title": "q3"})

    assert hidden not in listed
    assert served(CHART, "apps") in listed
    assert unseen.code == absent.code
    assert unseen.message.replace(hidden, "{}") == absent.message.replace(missing, "{}")
    assert tools["apps__show_report"].meta is not None
    assert tools["apps__show_report"].meta["ui"] == {"resourceUri": hidden}
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == "report q3"


async def test_the_apps_tool_itself_runs_through_the_gateway(watched: Watched) -> None:
    client, _ = watched

    result = await client.call_tool("apps__show_chart", {"series": "sales"})

    assert not result.is_error
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == "chart of sales"


def _contents(result: types.ReadResourceResult) -> list[dict[str, Any]]:
    return [c.model_dump(by_alias=True, exclude_none=True) for c in result.contents]
