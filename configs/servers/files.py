"""Example upstream: a files server confined to one workspace directory (stdio).

Besides its tools it serves the workspace as resources: the index (``file://ROOT/``), each file
through the template ``file://ROOT/{+path}`` (paths complete), and a ``review_file`` prompt that
embeds the file; writing or deleting a file announces ``resources/updated`` for it.

Run: ``python configs/servers/files.py --root DIR``.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
from collections.abc import Callable, Iterator
from pathlib import Path

from _resources import complete_argument, embedding, updated
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import Message
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True)
DELETE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True)
MAX_READ = 1 << 20
MAX_COMPLETIONS = 100


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
    async def write_file(path: str, content: str, ctx: Context) -> str:
        """Create or overwrite a UTF-8 text file in the workspace.

        Args:
            path: File path relative to the workspace root.
            content: The full new content of the file.
        """
        target = inside(path)
        with os_errors():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        await updated(ctx, f"{base}/{target.relative_to(root)}", f"{base}/")
        return f"wrote {len(content.encode())} bytes to {path}"

    @server.tool(annotations=DELETE)
    async def delete_file(path: str, ctx: Context) -> str:
        """Delete a file from the workspace.

        Args:
            path: File path relative to the workspace root.
        """
        target = inside(path)
        with os_errors():
            target.unlink()
        await updated(ctx, f"{base}/{target.relative_to(root)}", f"{base}/")
        return f"deleted {path}"

    base = f"file://{root.as_posix()}"
    _add_resources(server, root, base, inside)
    return server


def _files(root: Path, start: str = "") -> list[str]:
    """Workspace files (relative paths) that start with ``start``, at most `MAX_COMPLETIONS`."""
    found = (str(p.relative_to(root)) for p in sorted(root.rglob("*")) if p.is_file())
    return [p for p in found if p.startswith(start)][:MAX_COMPLETIONS]


def _add_resources(server: MCPServer, root: Path, base: str, inside: Callable[[str], Path]) -> None:
    """The workspace as resources: the index, a template for each file, the ``review_file``
    prompt (the file embedded), and completions of paths."""

    @server.resource(f"{base}/", name="workspace", mime_type="text/plain")
    def index() -> str:
        """The workspace's files, one relative path a line."""
        return "\n".join(_files(root))

    @server.resource(f"{base}/{{+path}}", name="file", mime_type="text/plain")
    def file(path: str) -> str:
        """A UTF-8 text file of the workspace."""
        with os_errors():
            return inside(path).read_text(encoding="utf-8")[:MAX_READ]

    @server.prompt(title="Review a file")
    def review_file(path: str, focus: str = "correctness") -> list[Message]:
        """Ask for a review of a workspace file, which travels embedded.

        Args:
            path: File path relative to the workspace root.
            focus: What the review looks at first.
        """
        with os_errors():
            text = inside(path).read_text(encoding="utf-8")[:MAX_READ]
        ask = f"Review {path}, looking at its {focus} first."
        return embedding(ask, f"{base}/{path}", text, "text/plain")

    complete_argument(server, "path", lambda typed: _files(root, typed))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", default="workspace", help="workspace directory")
    build(Path(parser.parse_args().root)).run("stdio")
