"""Prompts and completions through the gateway on every face: prompts named ``{prefix}__{name}``
like tools, their messages' resources readable through the gateway, completions answered by
the upstream that owns the prompt or the template."""

from __future__ import annotations

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from surface_support import UPSTREAMS, Heard, read_text, uri

Watched = tuple[Client, Heard]


async def test_the_prompts_of_every_upstream_are_listed_under_their_prefix(
    watched: Watched,
) -> None:
    client, _ = watched

    prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    summarize = prompts["old__summarize"]

    assert {f"{p}__summarize" for p in UPSTREAMS} <= prompts.keys()
    assert all(name.startswith(tuple(f"{p}__" for p in UPSTREAMS)) for name in prompts)
    assert summarize.title == "Summarize a note"
    assert summarize.meta == {"lockgate/server": "old"}
    assert [(a.name, a.required) for a in summarize.arguments or ()] == [
        ("note", True),
        ("style", False),
    ]


@pytest.mark.parametrize("prefix", UPSTREAMS)
async def test_a_prompt_is_got_with_its_arguments_and_its_resources_are_readable(
    watched: Watched, prefix: str
) -> None:
    client, _ = watched

    got = await client.get_prompt(f"{prefix}__summarize", {"note": "welcome", "style": "terse"})
    ask, embedded, link = (message.content for message in got.messages)

    assert isinstance(ask, types.TextContent)
    assert ask.text == "Summarize the note 'welcome', terse."
    assert isinstance(embedded, types.EmbeddedResource)
    assert isinstance(embedded.resource, types.TextResourceContents)
    assert embedded.resource.uri == uri(prefix, "echo://notes/welcome")
    assert embedded.resource.text == f"Welcome to {prefix}."
    assert isinstance(link, types.ResourceLink)
    assert link.uri == uri(prefix, "echo://readme")
    assert await read_text(client, embedded.resource.uri) == f"Welcome to {prefix}."
    assert await read_text(client, link.uri) == f"The {prefix} test server."


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("nowhere__summarize", id="unknown-server"),
        pytest.param("summarize", id="no-prefix"),
        pytest.param("bare__summarize", id="server-without-prompts"),
        pytest.param("dual__nothing", id="prompt-its-server-lacks"),
    ],
)
async def test_a_prompt_no_upstream_serves_is_invalid_params(watched: Watched, name: str) -> None:
    client, _ = watched

    with pytest.raises(MCPError) as raised:
        await client.get_prompt(name, {"note": "welcome"})

    assert raised.value.error.code == types.INVALID_PARAMS
    assert raised.value.error.message == f"Unknown prompt: {name}"


@pytest.mark.parametrize("prefix", UPSTREAMS)
async def test_a_prompt_argument_is_completed_by_the_prompts_upstream(
    watched: Watched, prefix: str
) -> None:
    client, _ = watched
    ref = types.PromptReference(type="ref/prompt", name=f"{prefix}__summarize")

    styles = await client.complete(ref, {"name": "style", "value": "d"})
    notes = await client.complete(ref, {"name": "note", "value": "wel"})

    assert styles.completion.values == ["detailed"]
    assert notes.completion.values == ["welcome"]


@pytest.mark.parametrize("prefix", UPSTREAMS)
async def test_a_template_variable_is_completed_by_the_templates_upstream(
    watched: Watched, prefix: str
) -> None:
    client, _ = watched
    ref = types.ResourceTemplateReference(
        type="ref/resource", uri=uri(prefix, "echo://notes/{note}")
    )

    completed = await client.complete(ref, {"name": "note", "value": "wel"})

    assert completed.completion.values == ["welcome"]


@pytest.mark.parametrize(
    "ref",
    [
        pytest.param(types.PromptReference(type="ref/prompt", name="nowhere__x"), id="prompt"),
        pytest.param(
            types.ResourceTemplateReference(type="ref/resource", uri="echo://notes/{note}"),
            id="template",
        ),
    ],
)
async def test_completing_for_an_unknown_reference_is_invalid_params(
    watched: Watched, ref: types.PromptReference | types.ResourceTemplateReference
) -> None:
    client, _ = watched

    with pytest.raises(MCPError) as raised:
        await client.complete(ref, {"name": "note", "value": ""})

    assert raised.value.error.code == types.INVALID_PARAMS
