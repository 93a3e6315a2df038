"""``lockgate pins ...``: approvers review changed tool definitions on a running gateway."""

from __future__ import annotations

import argparse
import json
from typing import Any

from gateway.cli._rest import aligned, api_request, connection_options, iso, print_listing

__all__ = ["register"]

COLUMNS = ("TOOL", "STATE", "CHANGED", "FIELDS", "PIN")


def _when(seconds: float | None) -> str:
    return "-" if seconds is None else iso(seconds)


def _table(pins: list[dict[str, Any]]) -> list[str]:
    rows = [COLUMNS] + [
        (
            p["name"],
            p["state"],
            _when(p["changed_at"]),
            ",".join(p["fields"]) or "-",
            (p["changed_pin"] or p["pin"])[:16],
        )
        for p in pins
    ]
    return aligned(rows)


def _list(args: argparse.Namespace) -> int:
    data = api_request(args, "GET", "/api/pins" + ("?all=true" if args.all else ""))
    empty = "no tool definitions" if args.all else "no changed tool definitions in quarantine"
    return print_listing(args, data["items"], empty, _table)


def _diff(args: argparse.Namespace) -> int:
    pin = api_request(args, "GET", f"/api/pins/{args.tool}")
    if args.json:
        print(json.dumps(pin, indent=2))
    elif pin["state"] != "quarantined":
        print(f"{pin['name']}: no change in quarantine (pin {pin['pin']})")
    else:
        print(f"{pin['name']} ({pin['server']}/{pin['tool']}): {', '.join(pin['fields'])} changed")
        hiding = _hiding_lines(pin.get("hidden_after_accept", []), "once accepted, ")
        for line in [*review_lines(pin.get("review") or {}), pin["diff"], *hiding]:
            print(line)
        print(f"accept with: lockgate pins accept {pin['name']} --pin {pin['changed_pin']}")
    return 0


def review_lines(review: dict[str, Any]) -> list[str]:
    """The flags, word diffs (``[-removed-]``, ``{+added+}``) and structural changes of a
    pin's review (`gateway.pins.review`), for a terminal."""
    flags = review.get("flags", {})
    lines = [
        f"flags: {', '.join(flags.get('changed', [])) or 'none'}"
        + (f" (new: {', '.join(flags['new'])})" if flags.get("new") else "")
    ]
    for field, runs in review.get("texts", {}).items():
        marked = {"=": "{}", "+": "{{+{}+}}", "-": "[-{}-]"}
        lines.append(f"{field}: " + "".join(marked[r["op"]].format(r["text"]) for r in runs))
    for change in review.get("structure", []):
        values = [json.dumps(change[k]) for k in ("before", "after") if k in change]
        lines.append(f"{change['change']} {change['path']}: {' -> '.join(values)}")
    return lines


def _hiding_lines(hiding: list[dict[str, Any]], when: str) -> list[str]:
    return [f"{when}still hidden: {h['text']}; to lift it, {h['lift']}" for h in hiding]


def _accept(args: argparse.Namespace) -> int:
    body = {"pin": args.pin}  # what the approver reviewed: a newer change is refused (409)
    accepted = api_request(args, "POST", f"/api/pins/{args.tool}/accept", body)
    print(f"{accepted['name']}: definition {accepted['pin'][:16]} accepted")
    for line in _hiding_lines(accepted.get("still_hidden", []), ""):
        print(line)
    return 0


def register(subparsers: Any) -> None:
    """Add ``pins list|diff|accept``."""
    pins = subparsers.add_parser("pins", help="review and accept changed tool definitions")
    commands = pins.add_subparsers(dest="pins_command", required=True, metavar="ACTION")
    listing = commands.add_parser("list", help="tools whose definition changed (in quarantine)")
    listing.add_argument("--all", action="store_true", help="every pinned tool")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=_list)
    diff = commands.add_parser("diff", help="what changed in one tool's definition")
    diff.add_argument("tool")
    diff.add_argument("--json", action="store_true", help="both definitions and the diff")
    diff.set_defaults(func=_diff)
    accept = commands.add_parser("accept", help="serve a changed definition from now on")
    accept.add_argument("tool")
    accept.add_argument(
        "--pin", required=True, help="the changed pin you reviewed (`lockgate pins diff` shows it)"
    )
    accept.set_defaults(func=_accept)
    for sub in (listing, diff, accept):
        connection_options(sub)
