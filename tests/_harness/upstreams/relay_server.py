"""A test upstream MCP server whose tools ask the client: elicitation, sampling, roots, and log.

Run as ``python tests/upstreams/relay_server.py [--era legacy|modern|dual] [--name NAME]
[--http PORT]`` (stdio by default; over HTTP it prints ``port N`` once listening).
The tools use the SDK's resolvers, so a 2025-11-25 connection gets requests sent mid-call and a
2026-07-28 connection an ``InputRequiredResult``: the two ways an upstream asks the client.
"""

from __future__ import annotations

# ruff: noqa: E402
from handoff import hand_off

hand_off()  # under pytest, a fork of its zygote runs this: the imports below are done there

import argparse
import socket
import warnings
from typing import Annotated, Any

import anyio
import mcp_types as types
import uvicorn
from echo_server import era_guard
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from pydantic import BaseModel
from serving import serve_stdio

LEVELS = ("debug", "info", "warning", "error")


class Name(BaseModel):
    """The answer the ``greet`` tool asks for."""

    name: str


def ask_name(question: str) -> Elicit[Name]:
    return Elicit(question, Name)


def ask_model(prompt: str) -> Sample:
    content = types.TextContent(type="text", text=prompt)
    return Sample([types.SamplingMessage(role="user", content=content)], max_tokens=64)


def ask_roots() -> ListRoots:
    return ListRoots()


def build(name: str, era: str) -> MCPServer:
    """The server; ``era`` ``legacy`` or ``modern`` refuses the other era."""
    server = MCPServer(name, version="1.0", log_level="WARNING")
    if era != "dual":
        server._lowlevel_server.middleware.insert(0, era_guard(era))

    @server.tool()
    def greet(question: str, answer: Annotated[Name, Resolve(ask_name)]) -> str:
        """Ask the user ``question`` for a name, then greet it."""
        return f"hello {answer.name}"

    @server.tool()
    def complete(
        prompt: str, sampled: Annotated[types.CreateMessageResult, Resolve(ask_model)]
    ) -> str:
        """Have the client's model complete ``prompt``."""
        content = sampled.content
        return f"model {sampled.model} said {getattr(content, 'text', content)}"

    @server.tool()
    def roots(listed: Annotated[types.ListRootsResult, Resolve(ask_roots)]) -> list[str]:
        """The client's roots."""
        return [str(root.uri) for root in listed.roots]

    levels: list[str] = []  # set with logging/setLevel (2025-11-25), in order

    async def set_level(
        ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        levels.append(params.level)
        return types.EmptyResult()

    server._lowlevel_server.add_request_handler(
        "logging/setLevel", types.SetLevelRequestParams, set_level
    )

    @server.tool()
    def log_levels() -> list[str]:
        """The levels the client set with ``logging/setLevel``, in order."""
        return levels

    @server.tool()
    async def chat(ctx: Context, text: str) -> str:
        """Log ``text`` once at each of debug, info, warning and error (logger ``chat``), from
        the level last set with ``logging/setLevel`` up (2026-07-28: the SDK filters)."""
        wanted = LEVELS[LEVELS.index(levels[-1]) :] if levels and levels[-1] in LEVELS else LEVELS
        with warnings.catch_warnings():  # logging is deprecated at 2026-07-28, still served
            warnings.simplefilter("ignore")
            for level in wanted:
                await ctx.log(level, f"{level}: {text}", logger_name="chat")
        return "logged"

    return server


async def _serve(server: MCPServer, era: str) -> None:
    await serve_stdio(server._lowlevel_server, era)


def _serve_http(server: MCPServer, port: int) -> None:
    """Listen first, then say where on stdout (``port N``): readiness without polling."""
    sock = socket.create_server(("127.0.0.1", port))
    print(f"port {sock.getsockname()[1]}", flush=True)
    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--era", choices=["dual", "legacy", "modern"], default="dual")
    parser.add_argument("--name", default="relay")
    parser.add_argument("--http", type=int, help="serve streamable HTTP on this port (0: any)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # deprecation notices of logging, sampling and roots
    server = build(args.name, args.era)
    if args.http is not None:
        _serve_http(server, args.http)
    else:
        anyio.run(_serve, server, args.era)


if __name__ == "__main__":
    main()
