"""A stdio test upstream that reports one environment variable and its process id.

Run as ``python env_server.py NAME``: the tool ``whoami`` answers ``{"value": $NAME, "pid":
...}``, so a test sees which secret (if any) reached which process.
"""

from __future__ import annotations

# ruff: noqa: E402
from handoff import hand_off

hand_off()  # under pytest, a fork of its zygote runs this: the imports below are done there

import os
import sys
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from echo_server import _serve_stdio
from mcp.server.mcpserver import MCPServer


def main() -> None:
    name = sys.argv[1]
    server = MCPServer("env")

    @server.tool()
    def whoami() -> dict[str, Any]:
        """The value of the watched environment variable in this process, and its pid."""
        return {"value": os.environ.get(name), "pid": os.getpid()}

    anyio.run(_serve_stdio, server, "dual")


if __name__ == "__main__":
    main()
