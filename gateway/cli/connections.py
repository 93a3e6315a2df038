"""``lockgate connections list|set|revoke``: a caller manages their own upstream secrets on a
running gateway (servers in ``credentials.mode: secret``).

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


def _revoke(args: argparse.Namespace) -> int:
    gone = api_request(_own_token(args), "DELETE", f"/api/connections/{args.server}")
    print(f"{gone['id']}: revoked; calls to {gone['server']} are refused until set again")
    return 0


def register(subparsers: Any) -> None:
    """Add ``connections list|set|revoke``."""
    parser = subparsers.add_parser("connections", help="your own upstream credentials")
    commands = parser.add_subparsers(dest="connections_command", required=True, metavar="ACTION")
    listing = commands.add_parser("list", help="your connections (--all: everyone's, approvers)")
    listing.add_argument("--all", action="store_true", help="every principal's (approvers)")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=_list)
    setting = commands.add_parser("set", help="set your secret for SERVER (read from stdin)")
    setting.add_argument("server", metavar="SERVER")
    setting.set_defaults(func=_set)
    revoke = commands.add_parser("revoke", help="forget your secret for SERVER")
    revoke.add_argument("server", metavar="SERVER")
    revoke.set_defaults(func=_revoke)
    for sub in (listing, setting, revoke):
        connection_options(sub)
