"""What the example servers share besides their tools: an embedded-resource prompt, completions
of one argument, and ``resources/updated`` announcements.

Imported by its siblings as a top-level module: they run as scripts, with this directory first on
``sys.path``.
"""

from __future__ import annotations

from collections.abc import Callable

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Message, UserMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS


def embedding(ask: str, uri: str, text: str, mime_type: str) -> list[Message]:
    """A prompt's messages: ``ask``, then the resource at ``uri`` embedded."""
    contents = types.TextResourceContents(uri=uri, text=text, mime_type=mime_type)
    return [
        UserMessage(ask),
        UserMessage(types.EmbeddedResource(type="resource", resource=contents)),
    ]


def complete_argument(server: MCPServer, name: str, values: Callable[[str], list[str]]) -> None:
    """Complete the argument ``name`` (of any prompt or template) with ``values(typed)``."""

    @server.completion()
    async def complete(
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: types.CompletionArgument,
        context: types.CompletionContext | None,
    ) -> types.Completion | None:
        if argument.name != name:
            return None
        return types.Completion(values=values(argument.value))


async def updated(ctx: Context, *uris: str) -> None:
    """Announce that ``uris`` changed, as the caller's protocol era does it."""
    for uri in uris:
        if ctx.request_context.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await ctx.notify_resource_updated(uri)
        else:
            await ctx.request_context.session.send_resource_updated(uri)
