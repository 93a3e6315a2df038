"""The ``lockgate`` command line."""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import importlib.util
import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import Any

import anyio

from gateway.cli import approvals as cli_approvals
from gateway.cli import connections as cli_connections
from gateway.cli import db as cli_db
from gateway.cli import doctor
from gateway.cli import events as cli_events
from gateway.cli import grants as cli_grants
from gateway.cli import pins as cli_pins
from gateway.cli import policy as policy_cli
from gateway.cli import replay as cli_replay
from gateway.cli import scripts as cli_scripts
from gateway.cli import sessions as cli_sessions
from gateway.cli import vault as cli_vault
from gateway.cli.config_file import config_option, config_path
from gateway.cli.errors import exit_code_for
from gateway.events.model import Event
from gateway.gateway import Gateway
from gateway.logs import use_format
from gateway.wiring.checks import load_config
from toolsets._sdk_compat import check_sdk
from toolsets.errors import LockgateError
from toolsets.result import ToolResult

__all__ = ["main"]

_HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None
log = logging.getLogger("lockgate")


def _cmd_serve(args: argparse.Namespace) -> int:
    from gateway.http.serve import serve

    flags = {"host": args.host, "port": args.port}
    config = load_config(args.config, listen={k: v for k, v in flags.items() if v is not None})
    use_format(args.log_format or config.logging.format)
    serve(Gateway(config), host=config.listen.host, port=config.listen.port)
    return 0


async def _run_stdio(args: argparse.Namespace) -> int:
    from gateway.mcp.stdio import serve_stdio

    # SIGTERM or SIGINT at any moment (start-up included) stops the gateway cleanly, taking its
    # upstream processes down with it.
    config = load_config(args.config)  # outside the task group: an error is one line
    use_format(args.log_format or config.logging.format)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_cancel_on_signal, tg.cancel_scope)
        async with Gateway(config) as gateway:
            await serve_stdio(gateway)
        tg.cancel_scope.cancel()
    return 0


async def _cancel_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            scope.cancel()
            return


async def _run_tools(args: argparse.Namespace) -> int:
    async with Gateway.from_config(args.config) as gateway:
        await gateway.wait_ready()  # a one-shot command waits for every upstream's first try
        tools = await gateway.list_tools()
        if args.json:
            print(
                json.dumps([t.definition() | {"name": t.name, "server": t.server} for t in tools])
            )
            return 0
        for tool in tools:
            summary = (tool.description or "").strip().splitlines()
            print(f"{tool.name:40} {summary[0] if summary else ''}")
        for name, status in gateway.health()["servers"].items():
            if status["status"] != "up":
                print(f"# server {name} is {status['status']}: {status['detail']}", file=sys.stderr)
    return 0


async def _run_call(args: argparse.Namespace) -> int:
    try:
        call_args = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise LockgateError(f"--args is not valid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(call_args, dict):
        raise LockgateError("--args must be a JSON object")
    async with (
        Gateway.from_config(args.config) as gateway,
        gateway.events.subscribe(["tool.approval.requested"]) as holds,
    ):
        await gateway.wait_ready()
        result = await _announcing_holds(holds, gateway.call_tool(args.tool, call_args))
    if args.json:
        print(json.dumps(result.wire, ensure_ascii=False))
    else:
        for block in result.wire["content"]:
            print(block.get("text") if block.get("type") == "text" else json.dumps(block))
    return 1 if result.is_error else 0


async def _announcing_holds(
    holds: AsyncIterator[Event], call: Coroutine[Any, Any, ToolResult]
) -> ToolResult:
    """``call``'s result; meanwhile a hold is announced the moment it happens."""
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(_say_held, holds)
        try:
            result = await call
        except Exception as exc:  # raised below, outside the task group: not wrapped
            failure = exc
        tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result


async def _say_held(holds: AsyncIterator[Event]) -> None:
    """Tell the person at the terminal at once that the call waits, and how to decide it."""
    async for event in holds:
        id, hold = event.data["approval_id"], event.data.get("hold_seconds")
        waiting = f"waiting up to {hold:g} s" if hold is not None else "waiting"
        print(
            f"lockgate: held for approval {id}, {waiting} "
            f"(approve with: lockgate approvals approve {id})",
            file=sys.stderr,
            flush=True,
        )


def _async(run: Callable[[argparse.Namespace], Coroutine[Any, Any, int]]) -> Callable[..., int]:
    def command(args: argparse.Namespace) -> int:
        return anyio.run(run, args, backend_options={"use_uvloop": _HAS_UVLOOP})

    return command


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    parser = argparse.ArgumentParser(prog="lockgate", description="MCP gateway with approvals.")
    parser.add_argument("--version", action="version", version=f"lockgate {_version()}")
    parser.add_argument("--verbose", "-v", action="store_true", help="log debug details")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="serve MCP over streamable HTTP (and the REST API)")
    config_option(serve)
    serve.add_argument("--host", help="override listen.host")
    serve.add_argument("--port", type=int, help="override listen.port")
    log_format_option(serve)
    serve.set_defaults(func=_cmd_serve)

    stdio = commands.add_parser("stdio", help="serve MCP over stdin/stdout")
    config_option(stdio)
    log_format_option(stdio)
    stdio.set_defaults(func=_async(_run_stdio))

    tools = commands.add_parser("tools", help="print the aggregated tool catalogue")
    config_option(tools)
    tools.add_argument("--json", action="store_true", help="print JSON")
    tools.set_defaults(func=_async(_run_tools))

    call = commands.add_parser("call", help="call one tool through the gateway")
    call.add_argument("tool", help="exposed tool name, e.g. files__read_file")
    call.add_argument("--args", default="{}", help="arguments as a JSON object")
    call.add_argument("--json", action="store_true", help="print the MCP result as JSON")
    config_option(call)
    call.set_defaults(func=_async(_run_call))

    cli_db.register(commands, config_option=config_option)
    doctor.register(commands, config_option=config_option)
    cli_approvals.register(commands)
    cli_grants.register(commands)
    cli_connections.register(commands)
    cli_vault.register(commands, config_option=config_option)
    cli_sessions.register(commands)
    cli_pins.register(commands)
    cli_events.register(commands)
    cli_scripts.register(commands, call=_async(_run_call), config_option=config_option)
    policy_cli.register(commands, extra=[cli_replay.register])
    _help_when_incomplete(parser)
    return parser


def log_format_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-format",
        choices=["text", "json"],
        help="stderr log lines: text, or one JSON object per line (default: logging.format)",
    )


def _version() -> str:
    try:
        return importlib.metadata.version("lockgate")
    except importlib.metadata.PackageNotFoundError:  # a source tree that was never installed
        return "unknown (not installed)"


def _help_when_incomplete(parser: argparse.ArgumentParser) -> None:
    """A command given without its sub-command (bare ``lockgate``, ``lockgate approvals``)
    prints its help and exits 0, instead of an argparse error; in ``parser`` and below it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            action.required = False
            parser.set_defaults(func=functools.partial(_print_help, parser))
            for sub in action.choices.values():
                _help_when_incomplete(sub)


def _print_help(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    parser.print_help()
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``lockgate`` console script."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="lockgate: %(levelname)s: %(message)s",
    )
    logging.getLogger("mcp").setLevel(logging.WARNING)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    try:
        check_sdk()
        if getattr(args, "find_config", False):
            args.config = config_path(args.config)
        code = args.func(args)
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    except LockgateError as exc:
        print(f"lockgate: error: {exc}", file=sys.stderr)
        code = exit_code_for(exc)
    sys.exit(code)


if __name__ == "__main__":
    main()
