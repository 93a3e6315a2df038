"""``lockgate policy replay``: re-decide the calls of an audit log with new policy files.

Exit codes: 0 the replay ran (whether or not decisions changed); 1 the policy files are
invalid; 2 a user error (no audit log at the path, a bad ``--since``). Errors are one line on
stderr.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from datetime import UTC, datetime, timedelta
from typing import Final

from gateway.audit.log import read_entries
from gateway.audit.replay import READ_KINDS, DiffRow, ReplayReport, replay
from gateway.cli.events import DEFAULT_AUDIT_DB
from gateway.cli.policy import Subparsers
from policies.durations import parse_duration
from policies.engine import PolicyEngine
from toolsets.errors import ConfigError

__all__ = ["register", "since_timestamp"]

PROG: Final = "lockgate policy replay"


def register(commands: Subparsers) -> None:
    """Add ``replay`` to the ``policy`` command's sub-parsers (see `gateway.cli.policy`)."""
    parser = commands.add_parser(
        "replay",
        help="re-decide every call of an audit log with new policy files; show what changes",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="new policy files, in order")
    parser.add_argument(
        "--audit", default=DEFAULT_AUDIT_DB, help=f"audit log (default {DEFAULT_AUDIT_DB})"
    )
    parser.add_argument(
        "--since", help="only calls of the last DURATION (7d, 12h, 30m) or since an ISO date"
    )
    parser.add_argument("--all", action="store_true", help="show unchanged rows too")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=_run)


def since_timestamp(text: str, now: datetime | None = None) -> str:
    """An audit timestamp from ``--since``: a duration back from ``now``, or an ISO date/time
    (UTC unless it says otherwise).

    Raises:
        ValueError: When ``text`` is neither.
    """
    try:
        moment = (now or datetime.now(UTC)) - timedelta(seconds=parse_duration(text))
    except ValueError:
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"--since {text!r} is neither a duration (7d, 12h, 30m) nor an ISO date/time"
            ) from None
        moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    stamp = moment.astimezone(UTC).isoformat(timespec="microseconds")
    return stamp.replace("+00:00", "Z")


def _error(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


def _run(args: argparse.Namespace) -> int:
    try:
        since = since_timestamp(args.since) if args.since else None
    except ValueError as exc:
        return _error(str(exc))
    try:
        engine = PolicyEngine.load(args.files)
        report = replay(read_entries(args.audit, READ_KINDS), engine, since=since)
    except ConfigError as exc:
        for issue in exc.issues:
            print(issue, file=sys.stderr)
        return 1
    except FileNotFoundError as exc:
        return _error(f"{exc} (the gateway writes it at events.audit.path once it ran calls)")
    except sqlite3.DatabaseError as exc:
        return _error(f"cannot read the audit log {args.audit!r}: {exc}")
    if args.json:
        data = report.to_json(everything=args.all)
        data = {"audit": args.audit, "since": since, "policy": _policy(engine)} | data
        print(json.dumps(data, indent=2))
    else:
        print(_text(report, args.audit, engine, since, everything=args.all))
    return 0


def _policy(engine: PolicyEngine) -> dict[str, object]:
    return {"version": engine.version, "files": list(engine.files)}


def _rule(row: DiffRow) -> str:
    return row.new_rule_id or "(defaults)"


def _table(rows: list[DiffRow]) -> list[str]:
    header = ("tool", "old -> new", "new rule", "calls")
    cells = [
        (
            r.tool,
            f"{r.old_effect} -> {r.new_effect}",
            _rule(r),
            f"{r.count}" + (f" ({r.redacted} with redacted args)" if r.redacted else ""),
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in [header, *cells]) for i in range(3)]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
        + "  "
        + row[3]
        for row in [header, *cells]
    ]


def _text(
    report: ReplayReport, audit: str, engine: PolicyEngine, since: str | None, *, everything: bool
) -> str:
    window = f" since {since}" if since else ""
    lines = [
        f"replayed {report.calls} call{'s'[: report.calls != 1]}{window} from {audit} "
        f"with policy {engine.version} ({', '.join(engine.files)})"
    ]
    rows = [r for r in report.rows if everything or r.changed]
    if rows:
        lines.extend(_table(rows))
    elif not everything:
        lines.append("no decision changes")
    lines.extend(
        f"now held: {held['ts']} {held['tool']} (call {held['call_id']}, session "
        f"{held['session_id']}): {held['reason']}"
        for held in report.held
    )
    changes = _changes(report.rows)
    lines.append(
        f"total: {report.calls} calls, {report.changed} changed{changes}, "
        f"{report.calls - report.changed} unchanged"
    )
    if report.skipped:
        lines.append(f"skipped {report.skipped} unreadable audit entries")
    lines.extend(f"note: {note}" for note in report.notes)
    return "\n".join(lines)


def _changes(rows: tuple[DiffRow, ...]) -> str:
    """`` (allow -> deny 3, ask -> allow 1)``: changed calls by effect pair."""
    pairs: dict[str, int] = {}
    for row in rows:
        if row.changed:
            pair = f"{row.old_effect} -> {row.new_effect}"
            pairs[pair] = pairs.get(pair, 0) + row.count
    return f" ({', '.join(f'{p} {n}' for p, n in pairs.items())})" if pairs else ""
