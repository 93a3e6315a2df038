"""Which gateway config file a command reads: ``-c PATH``, else ``$LOCKGATE_CONFIG``, else
``configs/gateway.yaml``, decided when the command runs (never at import), the same way for every
command; a missing file is one line naming the path, where it came from and how to point
elsewhere."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from gateway.cli.errors import UsageError

__all__ = [
    "CONFIG_VARIABLE",
    "DEFAULT_CONFIG",
    "ConfigChoice",
    "ConfigNotFound",
    "config_option",
    "config_path",
    "find_config",
]

CONFIG_VARIABLE: Final = "LOCKGATE_CONFIG"
DEFAULT_CONFIG: Final = "configs/gateway.yaml"
Source = Literal["flag", "variable", "default"]


@dataclass(frozen=True, slots=True)
class ConfigChoice:
    """The config file a command reads, and what chose it.

    Attributes:
        path: The file, as given (relative paths are relative to the current folder).
        source: ``flag`` (``-c``), ``variable`` (``LOCKGATE_CONFIG``) or ``default``.
    """

    path: str
    source: Source

    def origin(self) -> str:
        """Where the path came from, for messages."""
        here = "" if Path(self.path).is_absolute() else f", relative to {Path.cwd()}"
        return {
            "flag": f"given with -c{here}",
            "variable": f"from {CONFIG_VARIABLE}{here}",
            "default": f"the default{here}",
        }[self.source]


class ConfigNotFound(UsageError):
    """There is no config file where the command looked."""

    def __init__(self, choice: ConfigChoice, *, alternative: str = "") -> None:
        self.choice = choice
        fix = f"pass -c PATH or set {CONFIG_VARIABLE}=PATH{alternative}"
        super().__init__(f"no config file at {choice.path!r} ({choice.origin()}): {fix}")


def find_config(flag: str | None, environ: Mapping[str, str] | None = None) -> ConfigChoice:
    """The config file to read: ``flag`` (``-c``), else the variable, else the default."""
    if flag:
        return ConfigChoice(flag, "flag")
    variable = (os.environ if environ is None else environ).get(CONFIG_VARIABLE)
    if variable:
        return ConfigChoice(variable, "variable")
    return ConfigChoice(DEFAULT_CONFIG, "default")


def config_path(flag: str | None, *, alternative: str = "") -> str:
    """The config file to read (see `find_config`), checked to be there.

    Args:
        flag: The ``-c`` value, or None.
        alternative: Another way out, appended to the fix (``", or --db PATH"``).

    Raises:
        ConfigNotFound: no file at the chosen path.
    """
    choice = find_config(flag)
    if not Path(choice.path).is_file():
        raise ConfigNotFound(choice, alternative=alternative)
    return choice.path


def config_option(parser: argparse.ArgumentParser, *, help: str = "gateway config file") -> None:
    """Add ``-c/--config PATH``; the command's ``args.config`` is then found by `config_path`
    before it runs (``args.find_config`` marks the commands that want it)."""
    parser.add_argument(
        "--config",
        "-c",
        metavar="PATH",
        help=f"{help} (default: ${CONFIG_VARIABLE}, else {DEFAULT_CONFIG})",
    )
    parser.set_defaults(find_config=True)
