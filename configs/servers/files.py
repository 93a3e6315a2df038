"""Example upstream: a files server confined to one workspace directory (stdio).

Run: ``python configs/servers/files.py --root DIR``.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
from collections.abc import Iterator
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True)
DELETE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True)
MAX_READ = 1 << 20


@contextlib.contextmanager
def os_errors() -> Iterator[None]:
    """Report file-system failures to the model as tool errors."""
    try:
        yield
    except OSError as exc:
        raise ToolError(f"{exc.strerror}: {exc.filename}") from None


def build(root: Path) -> MCPServer:
    """A files server whose tools never leave ``root``."""
    root = root.resolve()
    root.mkdir(parents=True, exist_ok=True)
    server = MCPServer(
        "files",
        version="0.1.0",
        log_level="WARNING",
        instructions=f"Files under the workspace {root}.",
    )

    def inside(path: str) -> Path:
        target = (root / path).resolve()
        if target != root and root not in target.parents:
            raise ToolError(f"path {path!r} is outside the workspace")
        return target

    @server.tool(annotations=READ_ONLY)
    def read_file(path: str) -> str:
        """Read a UTF-8 text file from the workspace.

        Args:
            path: File path relative to the workspace root.
        """
        with os_errors():
            return inside(path).read_text(encoding="utf-8")[:MAX_READ]

    @server.tool(annotations=READ_ONLY)
    def list_directory(path: str = ".") -> list[str]:
        """List a workspace directory; directories end with '/'.

        Args:
            path: Directory path relative to the workspace root.
        """
        with os_errors():
            entries = sorted(inside(path).iterdir())
        return [e.name + ("/" if e.is_dir() else "") for e in entries]

    @server.tool(annotations=READ_ONLY)
    def search_files(pattern: str) -> list[str]:
        """Find workspace files whose relative path matches a glob pattern.

        Args:
            pattern: Glob pattern such as '*.md' or 'docs/*'.
        """
        found = (str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
        return sorted(p for p in found if fnmatch.fnmatch(p, pattern))

    @server.tool(annotations=WRITE)
    def write_file(path: str, content: str) -> str:
        """Create or overwrite a UTF-8 text file in the workspace.

        Args:
            path: File path relative to the workspace root.
            content: The full new content of the file.
        """
        target = inside(path)
        with os_errors():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        return f"wrote {len(content.encode())} bytes to {path}"

    @server.tool(annotations=DELETE)
    def delete_file(path: str) -> str:
        """Delete a file from the workspace.

        Args:
            path: File path relative to the workspace root.
        """
        with os_errors():
            inside(path).unlink()
        return f"deleted {path}"

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", default="workspace", help="workspace directory")
    build(Path(parser.parse_args().root)).run("stdio")
