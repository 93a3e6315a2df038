"""``lockgate grants ...``: approvers list and revoke standing grants on a running gateway.

A grant is made with an approval (``lockgate approvals approve ID --grant session|tool
[--for 30m] [--principal]``); until it expires or is revoked, later calls it covers run
without asking.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from gateway.cli._rest import ago, aligned, api_request, connection_options, print_listing

__all__ = ["register"]

COLUMNS = ("ID", "SCOPE", "TOOL", "FOR", "SESSION", "BY", "EXPIRES", "STATE")


def _state(grant: dict[str, Any], now: float) -> str:
    if grant["revoked_at"] is not None:
        return f"revoked by {grant['revoked_by']}"
    return "active" if grant["expires_at"] > now else "expired"


def _table(grants: list[dict[str, Any]], now: float) -> list[str]:
    rows = [COLUMNS] + [
        (
            g["id"],
            g["scope"],
            g["tool"],
            g["principal"] or "anyone",
            g["session_id"] or "-",
            g["created_by"],
            ago(g["expires_at"], now),
            _state(g, now),
        )
        for g in grants
    ]
    return aligned(rows)


def _list(args: argparse.Namespace) -> int:
    data = api_request(args, "GET", "/api/grants" + ("?all=1" if args.all else ""))
    empty = "no grants" if args.all else "no active grants"
    return print_listing(args, data["items"], empty, lambda items: _table(items, time.time()))


def _revoke(args: argparse.Namespace) -> int:
    grant = api_request(args, "POST", f"/api/grants/{args.id}/revoke")
    what = f"{grant['scope']} grant of {grant['tool']}"
    print(f"{grant['id']}: revoked ({what}); the calls it covered ask again")
    return 0


def register(subparsers: Any) -> None:
    """Add ``grants list|revoke``."""
    grants = subparsers.add_parser("grants", help="list and revoke standing grants")
    commands = grants.add_subparsers(dest="grants_command", required=True, metavar="ACTION")
    listing = commands.add_parser("list", help="active grants (made with approvals --grant)")
    listing.add_argument("--all", action="store_true", help="expired and revoked ones too")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=_list)
    revoke = commands.add_parser("revoke", help="revoke a grant: its calls ask again")
    revoke.add_argument("id", metavar="GRANT_ID")
    revoke.set_defaults(func=_revoke)
    for sub in (listing, revoke):
        connection_options(sub)
