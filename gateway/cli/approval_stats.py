"""``lockgate approvals stats``: approval analytics (``GET /api/analytics/approvals``) as
tables, and with ``--suggest`` the grant suggestions with their policy snippets."""

from __future__ import annotations

import argparse
import json
import urllib.parse
from typing import Any

from gateway.cli._rest import aligned, api_request, connection_options, iso

__all__ = ["register_stats", "stats_lines"]

_SHOWN = ("approve", "deny", "edit", "respond", "expire")
_HEADER = ("HELD", "PENDING", "APPROVE", "DENY", "EDIT", "RESPOND", "EXPIRE", "P50", "P90")


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def _rate(group: dict[str, Any], outcome: str) -> str:
    count, rate = group["counts"][outcome], group["rates"][outcome]
    return f"{count}" if rate is None else f"{count} ({rate:.0%})"


def _row(name: str, group: dict[str, Any]) -> tuple[str, ...]:
    waited = group["time_to_decision"]
    return (
        name,
        str(group["held"]),
        str(group["pending"]),
        *(_rate(group, outcome) for outcome in _SHOWN),
        _seconds(waited["p50"]),
        _seconds(waited["p90"]),
    )


def _table(title: str, groups: dict[str, dict[str, Any]]) -> list[str]:
    if not groups:
        return []
    rows = [(title, *_HEADER), *(_row(name, g) for name, g in groups.items())]
    return ["", *aligned(rows)]


def stats_lines(data: dict[str, Any], *, suggest: bool = False) -> list[str]:
    """The analytics as text: the window, what waits now, then a table per rule, tool and
    approver (counts with their share of the settled calls; time to decision p50/p90)."""
    lines = [
        f"approvals held {iso(data['since'])} .. {iso(data['until'])}; waiting now: "
        f"{data['waiting']}",
        *aligned([("", *_HEADER), _row("all", data["overall"])]),
    ]
    lines += _table("RULE", data["by_rule"])
    lines += _table("TOOL", data["by_tool"])
    lines += _table("APPROVER", data["by_approver"])
    if suggest:
        lines += _suggestions(data["suggestions"])
    return lines


def _suggestions(found: list[dict[str, Any]]) -> list[str]:
    if not found:
        return ["", "no grant suggestions: no pattern was approved every time often enough"]
    lines: list[str] = []
    for item in found:
        lines += ["", f"suggestion {item['id']}:", item["policy"].rstrip()]
    return lines


def _stats(args: argparse.Namespace) -> int:
    params = {"since": args.since} if args.since else {}
    if args.min_approvals is not None:
        params["min_approvals"] = str(args.min_approvals)
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    data = api_request(args, "GET", f"/api/analytics/approvals{query}")
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print("\n".join(stats_lines(data, suggest=args.suggest)))
    return 0


def register_stats(commands: Any) -> None:
    """Add ``approvals stats`` to the ``approvals`` subcommands."""
    stats = commands.add_parser(
        "stats", help="time to decision and outcome rates per rule, tool and approver"
    )
    stats.add_argument("--since", help="window: a duration back from now (24h, 7d; default 7d)")
    stats.add_argument(
        "--suggest",
        action="store_true",
        help="also print grant suggestions: patterns approved every time, as policy snippets",
    )
    stats.add_argument(
        "--min-approvals",
        type=int,
        help="approvals a pattern needs before it is suggested (default 5)",
    )
    stats.add_argument("--json", action="store_true", help="the analytics as JSON")
    stats.set_defaults(func=_stats)
    connection_options(stats)
