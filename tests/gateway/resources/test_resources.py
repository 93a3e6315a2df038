"""Resources through the gateway on every face: listed under ``lockgate://{prefix}/{uri}``,
paginated, read back through the upstream that owns them, and linked from tool results.

The upstreams are of each era (``dual``, ``old``, ``new``), so each test also shows that an
upstream of either era serves a client of either era; ``bare`` offers no resources and
``ghost`` is down.
"""

from __future__ import annotations

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from surface_support import ITEMS, UPSTREAMS, Heard, all_resources, read_text, uri

Watched = tuple[Client, Heard]


async def test_the_gateway_advertises_resources_prompts_and_completions(watched: Watched) -> None:
    client, _ = watched
    caps = client.server_capabilities

    assert caps.resources is not None
    assert caps.resources.subscribe is True
    assert caps.resources.list_changed is True
    assert caps.prompts is not None
    assert caps.prompts.list_changed is True
    assert caps.completions is not None


async def test_resources_of_every_upstream_are_listed_in_pages_under_gateway_uris(
    watched: Watched,
) -> None:
    client, _ = watched

    first = await client.list_resources()
    resources = await all_resources(client)
    uris = [resource.uri for resource in resources]

    assert len(first.resources) == 100
    assert first.next_cursor is not None
    assert len(uris) == len(set(uris))
    assert {uri("dual", f"echo://items/{i:03d}") for i in range(ITEMS)} <= set(uris)
    assert {uri(p, "echo://readme") for p in UPSTREAMS} <= set(uris)
    assert all(u.startswith(tuple(f"lockgate://{p}/" for p in UPSTREAMS)) for u in uris)
    readme = next(r for r in resources if r.uri == uri("old", "echo://readme"))
    assert readme.meta == {"lockgate/server": "old"}
    assert (readme.name, readme.title, readme.mime_type) == ("readme", "Read me", "text/plain")


async def test_a_cursor_the_gateway_did_not_make_is_invalid_params(watched: Watched) -> None:
    client, _ = watched

    with pytest.raises(MCPError) as raised:
        await client.list_resources(cursor="not-a-cursor")

    assert raised.value.error.code == types.INVALID_PARAMS


async def test_templates_keep_their_variables_behind_the_gateway_prefix(watched: Watched) -> None:
    client, _ = watched

    templates = (await client.list_resource_templates()).resource_templates

    assert {t.uri_template for t in templates} == {uri(p, "echo://notes/{note}") for p in UPSTREAMS}


@pytest.mark.parametrize("prefix", UPSTREAMS)
async def test_a_resource_is_read_through_its_gateway_uri(watched: Watched, prefix: str) -> None:
    client, _ = watched

    result = await client.read_resource(uri(prefix, "echo://readme"))
    note = await read_text(client, uri(prefix, "echo://notes/welcome"))  # from the template

    assert [c.uri for c in result.contents] == [uri(prefix, "echo://readme")]
    assert await read_text(client, uri(prefix, "echo://readme")) == f"The {prefix} test server."
    assert note == f"Welcome to {prefix}."


@pytest.mark.parametrize(
    "unknown",
    [
        pytest.param(uri("nowhere", "echo://readme"), id="unknown-server"),
        pytest.param("echo://readme", id="not-a-gateway-uri"),
        pytest.param("lockgate://dual", id="no-uri-after-the-prefix"),
        pytest.param(uri("bare", "echo://readme"), id="server-without-resources"),
    ],
)
async def test_a_uri_no_upstream_serves_is_resource_not_found(
    watched: Watched, unknown: str
) -> None:
    client, _ = watched

    with pytest.raises(MCPError) as raised:
        await client.read_resource(unknown)

    assert raised.value.error.code == types.INVALID_PARAMS
    assert unknown in raised.value.error.message


async def test_a_resource_the_upstream_does_not_have_is_not_found_under_its_gateway_uri(
    watched: Watched,
) -> None:
    client, _ = watched
    missing = uri("old", "echo://notes/missing")

    with pytest.raises(MCPError) as raised:
        await client.read_resource(missing)

    error = raised.value.error
    assert (error.code, error.message) == (types.INVALID_PARAMS, f"Unknown resource: {missing}")
    assert error.data == {"uri": missing}


async def test_a_down_upstream_lists_nothing_and_its_reads_name_it(watched: Watched) -> None:
    client, _ = watched

    listed = [r.uri for r in await all_resources(client)]
    with pytest.raises(MCPError) as raised:
        await client.read_resource(uri("ghost", "echo://readme"))

    assert not [u for u in listed if u.startswith(("lockgate://ghost/", "lockgate://bare/"))]
    assert "'ghost'" in raised.value.error.message
    assert "unavailable" in raised.value.error.message


@pytest.mark.parametrize("prefix", UPSTREAMS)
async def test_a_resource_link_in_a_tool_result_is_readable_through_the_gateway(
    watched: Watched, prefix: str
) -> None:
    client, _ = watched

    result = await client.call_tool(f"{prefix}__write_note", {"note": "linked", "text": "hi"})
    link = result.content[1]

    assert isinstance(link, types.ResourceLink)
    assert link.uri == uri(prefix, "echo://notes/linked")
    assert await read_text(client, link.uri) == "hi"
