"""What the README and docs tests share: the commands of a page's section, and running them as
written."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import IO

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent
APPROVER_TOKEN = "demo-approver-token"


def section(markdown: str, title: str) -> str:
    """The text under the heading ``title`` (any level), up to the next heading of the same or
    a higher level outside code blocks (a level-1 title: the whole page)."""
    found = re.search(rf"^(#+) {re.escape(title)}\n", markdown, re.M)
    assert found is not None, f"no heading {title!r}"
    level, lines, fenced = len(found.group(1)), [], False
    for line in markdown[found.end() :].splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        heading = re.match(r"(#+) ", line)
        if not fenced and heading and len(heading.group(1)) <= level:
            break
        lines.append(line)
    return "".join(lines)


def commands(markdown: str) -> list[str]:
    """The ``.venv/bin/lockgate`` lines in the shell blocks of ``markdown``, comments cut."""
    lines: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", markdown, flags=re.S):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command.startswith(".venv/bin/lockgate"):
                lines.append(command)
    return lines


def readme_commands(title: str) -> list[str]:
    """The ``.venv/bin/lockgate`` lines of a README section."""
    return commands(section(README, title))


def run(
    command: str, cwd: Path, env: dict[str, str] | None = None, **replace: str
) -> subprocess.CompletedProcess[str]:
    """``command`` as written (``.venv/bin`` standing for this interpreter's), with the
    ``replace`` placeholders filled in."""
    argv = argv_of(command, **replace)
    env = {**os.environ, "LOCKGATE_APPROVER_TOKEN": APPROVER_TOKEN, **(env or {})}
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def argv_of(command: str, **replace: str) -> list[str]:
    for placeholder, value in replace.items():
        command = command.replace(placeholder, value)
    argv = shlex.split(command)
    argv[0] = str(BIN / Path(argv[0]).name)
    return argv


def first_line_with(stream: IO[str], text: str) -> str:
    """The first line of ``stream`` containing ``text`` (the stream is read up to there)."""
    for line in stream:
        if text in line:
            return line
    raise AssertionError(f"{text!r} never printed")


def blocks(markdown: str, language: str) -> list[str]:
    """The fenced blocks of ``markdown`` in ``language`` (``json``, ``yaml``, ``sh``), in order."""
    return re.findall(rf"^```{re.escape(language)}\n(.*?)^```", markdown, flags=re.S | re.M)


def block(markdown: str, language: str) -> str:
    """The one fenced block of ``markdown`` in ``language``."""
    found = blocks(markdown, language)
    assert len(found) == 1, f"expected one {language} block, found {len(found)}"
    return found[0]
