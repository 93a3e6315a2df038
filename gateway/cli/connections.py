"""``lockgate connections list|set|connect|revoke``: a caller manages their own upstream
credentials on a running gateway: a secret (``credentials.mode: secret``), or their account
(``oauth``: ``connect`` prints the URL to open and waits until the connection is made).

The token is the caller's own (``--token``, else ``$LOCKGATE_TOKEN``, else
``$LOCKGATE_APPROVER_TOKEN``): an agent's or an approver's; a secret is always set for the
token's own principal. The secret is read from standard input (never from the command line,
where other users of the machine could read it).
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
import time
from typing import Any

from gateway.cli._rest import ago, aligned, api_request, connection_options, print_listing
from gateway.cli.errors import ApiError

__all__ = ["register"]

COLUMNS = ("ID", "SERVER", "PRINCIPAL", "SET")
POLL = 1.0
"""Seconds between two looks at whether ``connect`` has completed."""


def _own_token(args: argparse.Namespace) -> argparse.Namespace:
    token = args.token or os.environ.get("LOCKGATE_TOKEN")
    return argparse.Namespace(**{**vars(args), "token": token})


def _table(items: list[dict[str, Any]]) -> list[str]:
    now = time.time()
    rows = [COLUMNS] + [
        (c["id"], c["server"], c["principal"], ago(c["updated_at"], now)) for c in items
    ]
    return aligned(rows)


def _list(args: argparse.Namespace) -> int:
    path = "/api/connections/all" if args.all else "/api/connections"
    data = api_request(_own_token(args), "GET", path)
    return print_listing(args, data["items"], "no connections", _table)


def _read_secret(server: str) -> str:
    if sys.stdin.isatty():
        return getpass.getpass(f"secret for {server}: ")
    return sys.stdin.readline().rstrip("\r\n")


def _set(args: argparse.Namespace) -> int:
    secret = _read_secret(args.server)
    if not secret:
        raise ApiError("no secret given: type it at the prompt or pipe it on standard input")
    path = f"/api/connections/{args.server}"
    connection = api_request(_own_token(args), "PUT", path, {"secret": secret})
    print(f"{connection['id']}: {connection['principal']} connected to {connection['server']}")
    return 0


def _connected_since(args: argparse.Namespace, server: str, since: float) -> bool:
    items = api_request(_own_token(args), "GET", "/api/connections")["items"]
    return any(c["server"] == server and c["updated_at"] >= since for c in items)


def _connect(args: argparse.Namespace) -> int:
    since = time.time() - 1.0  # the gateway's clock may trail ours a little
    started = api_request(_own_token(args), "POST", f"/api/connections/{args.server}/connect")
    print(f"open this URL in your browser to connect to {args.server}:\n{started['url']}")
    sys.stdout.flush()
    deadline = time.monotonic() + args.timeout
    while not _connected_since(args, args.server, since):
        if time.monotonic() >= deadline:
            raise ApiError(
                f"not connected to {args.server} after {args.timeout:g} s: open the URL above "
                f"(it stays valid for a few minutes) or run `lockgate connections connect "
                f"{args.server}` again"
            )
        time.sleep(POLL)
    print(f"connected to {args.server}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    gone = api_request(_own_token(args), "DELETE", f"/api/connections/{args.server}")
    upstream = " (and at its authorization server)" if gone.get("revoked_upstream") else ""
    print(f"{gone['id']}: revoked{upstream}; calls to {gone['server']} need you to connect again")
    return 0


def register(subparsers: Any) -> None:
    """Add ``connections list|set|connect|revoke``."""
    parser = subparsers.add_parser("connections", help="your own upstream credentials")
    commands = parser.add_subparsers(dest="connections_command", required=True, metavar="ACTION")
    listing = commands.add_parser("list", help="your connections (--all: everyone's, approvers)")
    listing.add_argument("--all", action="store_true", help="every principal's (approvers)")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=_list)
    setting = commands.add_parser("set", help="set your secret for SERVER (read from stdin)")
    setting.add_argument("server", metavar="SERVER")
    setting.set_defaults(func=_set)
    connect = commands.add_parser("connect", help="connect your account to SERVER (oauth)")
    connect.add_argument("server", metavar="SERVER")
    connect.add_argument(
        "--timeout", type=float, default=300.0, help="seconds to wait for the browser (300)"
    )
    connect.set_defaults(func=_connect)
    revoke = commands.add_parser("revoke", help="forget your credential for SERVER")
    revoke.add_argument("server", metavar="SERVER")
    revoke.set_defaults(func=_revoke)
    for sub in (listing, setting, connect, revoke):
        connection_options(sub)
