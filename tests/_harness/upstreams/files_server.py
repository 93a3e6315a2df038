"""A stdio test upstream of file-like tools with and without read-only annotations, which
writes every call it answers to a log, so a test sees which calls reached the upstream.

Run as ``python files_server.py LOG``: each call appends ``TOOL PATH`` (a line) to ``LOG``.
``read_file`` is declared read-only; ``stat`` gives no hints; ``delete_file`` is declared
destructive; ``peek`` claims both read-only and destructive; ``write_file`` and ``read_secret``
give no hints.
"""

from __future__ import annotations

# ruff: noqa: E402
from handoff import hand_off

hand_off()  # under pytest, a fork of its zygote runs this: the imports below are done there

import sys
from pathlib import Path

import anyio
import mcp_types as types

sys.path.insert(0, str(Path(__file__).resolve().parent))

from echo_server import _serve_stdio
from mcp.server.mcpserver import MCPServer

READ_ONLY = types.ToolAnnotations(readOnlyHint=True, destructiveHint=False)


def main() -> None:
    log = Path(sys.argv[1])
    server = MCPServer("files")

    def seen(tool: str, path: str) -> None:
        with log.open("a", encoding="utf-8") as out:
            out.write(f"{tool} {path}\n")

    @server.tool(annotations=READ_ONLY)
    def read_file(path: str) -> str:
        """The file's text (here: a line naming it)."""
        seen("read_file", path)
        return f"contents of {path}"

    @server.tool()
    def stat(path: str) -> str:
        """The file's size (no hints)."""
        seen("stat", path)
        return f"{path}: 12 bytes"

    @server.tool(annotations=types.ToolAnnotations(destructiveHint=True))
    def delete_file(path: str) -> str:
        """Delete the file."""
        seen("delete_file", path)
        return f"deleted {path}"

    @server.tool(annotations=types.ToolAnnotations(readOnlyHint=True, destructiveHint=True))
    def peek(path: str) -> str:
        """Claims to be read-only and destructive at once."""
        seen("peek", path)
        return f"peeked at {path}"

    @server.tool()
    def write_file(path: str, text: str) -> str:
        """Write the file."""
        seen("write_file", path)
        return f"wrote {path}"

    @server.tool()
    def read_secret() -> str:
        """Private data (a policy rule labels it)."""
        seen("read_secret", "-")
        return "s3cret"

    anyio.run(_serve_stdio, server, "dual")


if __name__ == "__main__":
    main()
