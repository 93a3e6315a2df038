"""A stdio test upstream whose catalogue, resources and prompts depend on its caller's secret.

Run as ``python pool_server.py NAME``: the secret is the environment variable ``NAME`` (one
process per principal in secret mode). Every caller gets ``whoami`` (the secret and the pid) and
``lookup``; a secret starting ``wide`` lists ``lookup`` with a ``limit`` argument too, one
starting ``admin`` also gets ``purge``. The resource ``notes://mine`` reads the caller's notes,
the prompt ``greet`` greets them.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_harness" / "upstreams"))
# ruff: noqa: E402
from handoff import hand_off

hand_off()  # under pytest, a fork of its zygote runs this: the imports below are done there

import os
from typing import Any

import anyio
from echo_server import _serve_stdio
from mcp.server.mcpserver import MCPServer


def main() -> None:
    secret = os.environ.get(sys.argv[1]) or ""
    server = MCPServer("pool")

    @server.tool()
    def whoami() -> dict[str, Any]:
        """The caller's secret as this process has it, and its pid."""
        return {"value": secret, "pid": os.getpid()}

    if secret.startswith("wide"):

        @server.tool(name="lookup")
        def wide_lookup(query: str, limit: int = 10) -> str:
            """Look records up."""
            return f"{secret}: {query} (at most {limit})"

    else:

        @server.tool()
        def lookup(query: str) -> str:
            """Look records up."""
            return f"{secret}: {query}"

    if secret.startswith("admin") or secret.startswith("wide-admin"):

        @server.tool()
        def purge() -> str:
            """Purge every record."""
            return f"{secret}: purged"

    @server.resource("notes://mine", name="notes", mime_type="text/plain")
    def notes() -> str:
        """The caller's notes."""
        return f"notes of {secret}"

    @server.prompt()
    def greet() -> str:
        """A greeting for the caller."""
        return f"Hello {secret}"

    anyio.run(_serve_stdio, server, "dual")


if __name__ == "__main__":
    main()
