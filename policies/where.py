"""Where a rule is written, as people read it: its file relative to the config file's directory
when it lies there, else as the config gives it, then its line."""

from __future__ import annotations

from pathlib import Path

__all__ = ["shown_file", "where"]


def shown_file(file: str, root: Path | None) -> str:
    """``file`` relative to ``root`` (the config file's directory) when it lies under it, else
    unchanged; ``root`` None leaves it unchanged too."""
    if root is None:
        return file
    for path, base in [(Path(file), root), (Path(file).resolve(), root.resolve())]:
        if path.is_relative_to(base):
            return str(path.relative_to(base))
    return file


def where(file: str, line: int | None, root: Path | None = None) -> str:
    """``file:line`` (``file`` alone without a line), the file as `shown_file` shows it."""
    shown = shown_file(file, root)
    return f"{shown}:{line}" if line is not None else shown
