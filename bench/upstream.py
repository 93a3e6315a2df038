"""The benchmark's upstream MCP server: ``echo``, ``big`` and ``fail``, plus realistic tools.

Run as ``python bench/upstream.py [--tools N] [--http PORT]`` (stdio by default). ``--tools N``
serves exactly N tools: the three above and N - 3 generated ones whose schemas look like real
servers' (enums, nested objects, arrays, formats, defaults, descriptions on every field).
"""

from __future__ import annotations

import argparse
from typing import Annotated, Any, Literal

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

BASE_TOOLS = 3
RESOURCES = ("issues", "tickets", "files", "orders", "customers", "invoices", "pages", "events")


class Filter(BaseModel):
    """A field filter."""

    field: Annotated[str, Field(description="Field name, e.g. 'status' or 'owner.email'.")]
    op: Annotated[Literal["eq", "ne", "lt", "gt", "in", "contains"], Field(description="Operator.")]
    value: Annotated[str | int | list[str], Field(description="Value compared with the field.")]


def _search(
    query: Annotated[str, Field(description="Full-text query.", min_length=1, max_length=512)],
    filters: Annotated[list[Filter], Field(description="All must match.")] | None = None,
    sort: Annotated[Literal["relevance", "created", "updated"], Field(description="Order.")] = (
        "relevance"
    ),
    limit: Annotated[int, Field(description="Maximum results.", ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Field(description="Opaque cursor from a previous page.")] = None,
) -> dict[str, Any]:
    return {"query": query, "results": [], "next_cursor": None}


def _create(
    title: Annotated[str, Field(description="Short title.", max_length=200)],
    body: Annotated[str, Field(description="Markdown body.")] = "",
    priority: Annotated[
        Literal["low", "normal", "high", "urgent"], Field(description="Urgency.")
    ] = "normal",
    labels: Annotated[list[str], Field(description="Labels to attach.", max_length=20)]
    | None = None,
    due: Annotated[
        str | None, Field(description="Due date (ISO 8601).", json_schema_extra={"format": "date"})
    ] = None,
) -> dict[str, Any]:
    return {"id": "r-1", "title": title}


def _update(
    record_id: Annotated[str, Field(description="Record id.", pattern=r"^[a-z]-[0-9]+$")],
    fields: Annotated[dict[str, str], Field(description="Fields to set, by name.")],
    expected_version: Annotated[int | None, Field(description="Optimistic lock.", ge=0)] = None,
) -> dict[str, Any]:
    return {"id": record_id, "updated": sorted(fields)}


TEMPLATES = (
    ("search", _search, "Search {r} matching a query and filters; returns one page of matches."),
    ("create", _create, "Create one record in {r}; returns its id."),
    ("update", _update, "Update fields of one record in {r}, optionally with optimistic locking."),
)


def build(tools: int = BASE_TOOLS) -> MCPServer:
    """The server with exactly ``max(tools, 3)`` tools."""
    server = MCPServer("bench-upstream", version="1.0", log_level="WARNING")

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=False))
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def big(kib: int) -> str:
        """Return ``kib`` KiB of text."""
        return "x" * (kib * 1024)

    @server.tool(annotations=ToolAnnotations(destructiveHint=True))
    def fail(message: str) -> str:
        """Always fails with the message (the bench policy denies it)."""
        raise ToolError(message)

    for index in range(max(0, tools - BASE_TOOLS)):
        verb, fn, description = TEMPLATES[index % len(TEMPLATES)]
        resource = RESOURCES[(index // len(TEMPLATES)) % len(RESOURCES)]
        name = f"{verb}_{resource}_{index:03d}"
        server.add_tool(fn, name=name, description=description.format(r=resource))
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tools", type=int, default=BASE_TOOLS, help="how many tools in all")
    parser.add_argument("--http", type=int, default=None, help="serve streamable HTTP on this port")
    args = parser.parse_args()
    server = build(args.tools)
    if args.http is None:
        server.run("stdio")
    else:
        app = server.streamable_http_app(host="127.0.0.1")
        uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning")


if __name__ == "__main__":
    main()
