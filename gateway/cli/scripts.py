"""``lockgate scripts check | run``: check the sandboxed scripts and hooks; run a script."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from gateway.config.model import GatewayConfig
from gateway.wiring.checks import load_config
from toolsets.errors import ConfigError, LockgateError
from toolsets.prefixed import SEPARATOR

__all__ = ["register"]

Command = Callable[[argparse.Namespace], int]

EXIT_OK = 0
EXIT_FAILED = 1


def _check(args: argparse.Namespace) -> int:
    """Load the config as ``serve`` would: every script and hook is read and checked."""
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        for issue in exc.issues:
            print(issue, file=sys.stderr)
        return EXIT_FAILED
    scripts, hooks = len(_script_tools(config)), len(config.hooks)
    print(f"ok: {scripts} script{'s'[: scripts != 1]}, {hooks} hook{'s'[: hooks != 1]}")
    return EXIT_OK


def _script_tools(config: GatewayConfig) -> dict[str, str]:
    """Exposed name -> script name, for every script of an enabled script server."""
    return {
        f"{server.exposed_prefix}{SEPARATOR}{script.name}": script.name
        for server in config.enabled_servers()
        if server.transport == "script"
        for script in server.scripts
    }


def _exposed_name(config: GatewayConfig, tool: str, path: str) -> str:
    """``tool`` as exposed: an exposed name, or a script's name when only one script has it."""
    tools = _script_tools(config)
    if tool in tools:
        return tool
    named = [exposed for exposed, script in tools.items() if script == tool]
    if len(named) == 1:
        return named[0]
    known = ", ".join(sorted(tools)) or "none"
    raise LockgateError(f"{tool!r} is not a script tool of {path} (script tools: {known})")


def _running(call: Command) -> Command:
    """``call`` (the ``lockgate call`` command) for a script tool, named as exposed or by name."""

    def run(args: argparse.Namespace) -> int:
        tool = _exposed_name(load_config(args.config), args.tool, args.config)
        return call(argparse.Namespace(**{**vars(args), "tool": tool}))

    return run


def register(
    subparsers: Any, *, call: Command, config_option: Callable[[argparse.ArgumentParser], None]
) -> None:
    """Add ``scripts check|run``.

    Args:
        subparsers: The ``lockgate`` sub-commands.
        call: The ``lockgate call`` command: runs one tool and prints its result.
        config_option: Adds the ``--config`` option of the gateway commands.
    """
    scripts = subparsers.add_parser("scripts", help="check and run sandboxed scripts and hooks")
    commands = scripts.add_subparsers(dest="scripts_command", required=True, metavar="ACTION")
    check = commands.add_parser("check", help="check every script and hook of the config")
    config_option(check)
    check.set_defaults(func=_check)
    run = commands.add_parser("run", help="run one script tool through the gateway")
    run.add_argument("tool", help="the script tool: its exposed name (ops__add) or its name (add)")
    run.add_argument("--args", default="{}", help="arguments as a JSON object")
    run.add_argument("--json", action="store_true", help="print the MCP result as JSON")
    config_option(run)
    run.set_defaults(func=_running(call))
