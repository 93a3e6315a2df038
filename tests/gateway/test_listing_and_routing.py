"""Aggregated listing and routing over every face: HTTP and stdio, legacy and modern clients.

The module's gateway has a dual-era, a legacy-only and a modern-only upstream, so each test also
shows that an upstream of either era is fully usable from a client of either era.
"""

from __future__ import annotations

import mcp_types as types
import pytest
from gateway_faces import ECHO_TOOLS, LEGACY, MODERN, text_of
from mcp import Client
from mcp.shared.exceptions import MCPError
from upstreams.echo_server import build

UPSTREAMS = [
    pytest.param("dual", MODERN, id="dual-era-upstream"),
    pytest.param("old", LEGACY, id="legacy-only-upstream"),
    pytest.param("new", MODERN, id="modern-only-upstream"),
]


async def test_lists_every_upstream_tool_under_its_server_prefix(client: Client) -> None:
    listed = {tool.name for tool in (await client.list_tools()).tools}

    assert listed == {f"{p}__{t}" for p in ("dual", "old", "new") for t in ECHO_TOOLS}


@pytest.mark.parametrize(("prefix", "upstream_protocol"), UPSTREAMS)
async def test_a_call_is_routed_to_the_upstream_its_prefix_names(
    client: Client, prefix: str, upstream_protocol: str
) -> None:
    echoed = await client.call_tool(f"{prefix}__echo", {"text": f"hello {prefix}"})
    who = await client.call_tool(f"{prefix}__whoami", {})

    assert not echoed.is_error
    assert text_of(echoed) == f"hello {prefix}"
    assert echoed.structured_content == {"result": f"hello {prefix}"}
    assert who.structured_content is not None
    assert who.structured_content["protocol"] == upstream_protocol


@pytest.mark.parametrize(("prefix", "upstream_protocol"), UPSTREAMS)
async def test_annotations_and_schemas_pass_through_unchanged_beside_the_gateway_meta(
    client: Client, prefix: str, upstream_protocol: str
) -> None:
    mode = "legacy" if upstream_protocol == LEGACY else "auto"
    async with Client(build(prefix), mode=mode) as direct:
        originals = {tool.name: tool for tool in (await direct.list_tools()).tools}
    exposed = {
        tool.name.removeprefix(f"{prefix}__"): tool
        for tool in (await client.list_tools()).tools
        if tool.name.startswith(f"{prefix}__")
    }

    assert exposed.keys() == originals.keys()
    for name, original in originals.items():
        gateway_fields = {"name", "meta", "execution"}  # execution: checked below
        assert exposed[name].model_dump(exclude=gateway_fields) == original.model_dump(
            exclude=gateway_fields
        )
        assert exposed[name].meta is not None
        assert exposed[name].meta["lockgate/server"] == prefix
        assert len(exposed[name].meta["lockgate/pin"]) == 64
    assert exposed["echo"].annotations == types.ToolAnnotations(
        read_only_hint=True, destructive_hint=False
    )
    assert exposed["slow"].annotations is not None
    assert exposed["slow"].annotations.destructive_hint is True
    assert exposed["whoami"].output_schema is not None
    weather = exposed["weather"]  # every optional part of a definition, passed whole
    assert weather.title == "Weather report"
    # 2026-07-28 tools have no `execution`: it survives only where both hops speak 2025-11-25.
    both_legacy = upstream_protocol == LEGACY and client.protocol_version == LEGACY
    optional = types.ToolExecution(task_support="optional")
    assert weather.execution == (optional if both_legacy else None)
    assert weather.icons == [types.Icon(src="https://example.com/sun.png", mime_type="image/png")]
    assert weather.meta is not None
    assert weather.meta["example.com/team"] == "weather"
    assert weather.meta["lockgate/server"] == prefix  # the gateway's keys are its own


@pytest.mark.parametrize("prefix", ["dual", "old", "new"])
async def test_an_upstream_tool_error_comes_back_as_an_error_result(
    client: Client, prefix: str
) -> None:
    result = await client.call_tool(f"{prefix}__fail", {"message": "disk on fire"})

    assert result.is_error
    assert "disk on fire" in text_of(result)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("dual__no_such_tool", id="unknown-tool-of-a-known-server"),
        pytest.param("nowhere__echo", id="unknown-server-prefix"),
        pytest.param("echo", id="no-prefix"),
    ],
)
async def test_an_unknown_tool_is_an_invalid_params_error(client: Client, name: str) -> None:
    with pytest.raises(MCPError) as caught:
        await client.call_tool(name, {"text": "x"})

    assert caught.value.error.code == types.INVALID_PARAMS
    assert name in caught.value.error.message


async def test_invalid_arguments_come_back_as_an_error_result(client: Client) -> None:
    result = await client.call_tool("dual__echo", {"text": 42, "extra": True})

    assert result.is_error


async def test_a_large_result_passes_through_intact(client: Client) -> None:
    result = await client.call_tool("old__big", {"kib": 256})

    assert not result.is_error
    assert text_of(result) == "x" * (256 * 1024)


@pytest.mark.parametrize("prefix", ["dual", "old", "new"])
async def test_a_result_carries_the_gateway_identity_not_the_upstream_one(
    client: Client, prefix: str
) -> None:
    result = await client.call_tool(f"{prefix}__echo", {"text": "who"})

    server_info = (result.meta or {}).get(types.SERVER_INFO_META_KEY)
    if client.protocol_version == MODERN:
        assert server_info is not None
        assert server_info["name"] == "lockgate"
    else:
        assert server_info is None


async def test_the_downstream_client_authorization_never_reaches_a_stdio_upstream(
    client: Client,
) -> None:
    who = await client.call_tool("dual__whoami", {})

    assert who.structured_content == {"protocol": MODERN, "authorization": None}
