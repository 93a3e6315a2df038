"""A legacy-only (2025-11-25) stdio upstream strict about what it has: a read, subscription,
prompt get or completion of anything it does not list is answered as unknown (invalid params,
as SEP-2164 asks), where the SDK's `MCPServer` accepts or fails otherwise. Low-level `Server`.

It has the resource ``strict://known``, the template ``strict://things/{id}`` (any id reads) and
the prompt ``known`` (argument ``topic``, completing to `TOPICS`).
"""

from __future__ import annotations

# ruff: noqa: E402
from handoff import hand_off

hand_off()  # under pytest, a fork of its zygote runs this: the imports below are done there

from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

KNOWN = "strict://known"
THINGS = "strict://things/"
TEMPLATE = THINGS + "{id}"
PROMPT = "known"
TOPICS = ("alpha", "beta")

Ctx = ServerRequestContext[Any]
Page = types.PaginatedRequestParams | None


def _unknown(what: str, name: str, **data: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=f"Unknown {what}: {name}", data=data or None)


def _has(uri: str) -> bool:
    return uri == KNOWN or (uri.startswith(THINGS) and len(uri) > len(THINGS))


async def list_tools(ctx: Ctx, params: Page) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[])


async def list_resources(ctx: Ctx, params: Page) -> types.ListResourcesResult:
    resource = types.Resource(uri=KNOWN, name="known", mime_type="text/plain")
    return types.ListResourcesResult(resources=[resource])


async def list_templates(ctx: Ctx, params: Page) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(uri_template=TEMPLATE, name="thing")
    return types.ListResourceTemplatesResult(resource_templates=[template])


async def read_resource(
    ctx: Ctx, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    if not _has(params.uri):
        raise _unknown("resource", params.uri, uri=params.uri)
    text = types.TextResourceContents(
        uri=params.uri, text=f"read {params.uri}", mime_type="text/plain"
    )
    return types.ReadResourceResult(contents=[text])


async def subscribe(ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
    if not _has(params.uri):
        raise _unknown("resource", params.uri, uri=params.uri)
    return types.EmptyResult()


async def unsubscribe(ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


async def list_prompts(ctx: Ctx, params: Page) -> types.ListPromptsResult:
    prompt = types.Prompt(name=PROMPT, arguments=[types.PromptArgument(name="topic")])
    return types.ListPromptsResult(prompts=[prompt])


async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    if params.name != PROMPT:
        raise _unknown("prompt", params.name)
    topic = (params.arguments or {}).get("topic", "")
    text = types.TextContent(type="text", text=f"Tell me about {topic}.")
    return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=text)])


async def complete(ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
    ref = params.ref
    if isinstance(ref, types.PromptReference) and ref.name != PROMPT:
        raise _unknown("prompt", ref.name)
    if isinstance(ref, types.ResourceTemplateReference) and ref.uri != TEMPLATE:
        raise _unknown("resource", ref.uri, uri=ref.uri)
    values = [t for t in TOPICS if t.startswith(params.argument.value)]
    return types.CompleteResult(completion=types.Completion(values=values))


def build() -> Server[Any]:
    return Server(
        "strict",
        version="1.0",
        on_list_tools=list_tools,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
    )


async def _serve() -> None:
    server = build()
    options = server.create_initialization_options(NotificationOptions())
    async with stdio_server() as (read, write), server.lifespan(server) as state:
        await serve_loop(server, read, write, lifespan_state=state, init_options=options)


if __name__ == "__main__":
    anyio.run(_serve)
