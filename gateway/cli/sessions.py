"""``lockgate sessions ...``: approvers see and clear a session's data-flow labels on a running
gateway (``labels``, ``clear-labels``); the clearing is on record with its reason."""

from __future__ import annotations

import argparse
import json
import urllib.parse
from typing import Any

from gateway.cli._rest import api_request, connection_options

__all__ = ["register"]


def _path(args: argparse.Namespace, tail: str) -> str:
    return f"/api/sessions/{urllib.parse.quote(args.id, safe='')}/{tail}"


def _labels(args: argparse.Namespace) -> int:
    query = urllib.parse.urlencode({"principal": args.principal})
    data = api_request(args, "GET", _path(args, f"labels?{query}"))
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
        return 0
    if not data["labels"]:
        print(f"session {args.id} of {args.principal}: no labels")
        return 0
    for name in data["labels"]:
        calls = ", ".join(f"{s['tool']} (call {s['call_id']})" for s in data["sources"][name])
        print(f"{name}: {calls}")
    return 0


def _clear(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"principal": args.principal, "reason": args.reason}
    if args.label:
        body["labels"] = args.label
    data = api_request(args, "POST", _path(args, "labels/clear"), body)
    cleared = data["cleared"]
    if cleared:
        print(f"session {args.id} of {args.principal}: cleared {', '.join(cleared)}")
    else:
        print(f"session {args.id} of {args.principal}: carried none of those labels")
    return 0


def register(subparsers: Any) -> None:
    """Add ``sessions labels|clear-labels``."""
    sessions = subparsers.add_parser("sessions", help="a session's data-flow labels")
    commands = sessions.add_subparsers(dest="sessions_command", required=True, metavar="ACTION")
    labels = commands.add_parser("labels", help="the labels a session carries, and their calls")
    labels.add_argument("--json", action="store_true")
    labels.set_defaults(func=_labels)
    clear = commands.add_parser(
        "clear-labels", help="clear a session's labels (an approver's act, on record)"
    )
    clear.add_argument("--reason", required=True, help="why (on record)")
    clear.add_argument(
        "--label", action="append", metavar="NAME", help="a label to clear (repeat; default: all)"
    )
    clear.set_defaults(func=_clear)
    for sub in (labels, clear):
        sub.add_argument("id", metavar="SESSION_ID")
        sub.add_argument("--principal", required=True, help="the session's caller, e.g. agent:bot")
        connection_options(sub)
