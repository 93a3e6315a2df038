"""``lockgate approvals ...``: approvers act on a running gateway through its REST API."""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from typing import Any

import anyio

from gateway.cli._rest import (
    ago,
    api_request,
    approver_headers,
    connection_options,
    print_listing,
)
from gateway.cli.approval_stats import register_stats
from gateway.cli.approval_view import HISTORY_STATES, details, history_table
from gateway.cli.errors import ApiError
from gateway.cli.events import format_event, stream_events
from gateway.events.model import Event

__all__ = ["ApiError", "api_request", "connection_options", "register"]

COLUMNS = ("ID", "STATE", "TOOL", "CALLER", "REQUESTED", "EXPIRES", "ARGS")


def table(calls: list[dict[str, Any]], now: float) -> list[str]:
    """The calls as an aligned table, one row each."""
    rows = [COLUMNS] + [
        (
            call["id"],
            call["state"],
            call["tool"],
            call["principal"],
            ago(call["created_at"], now),
            ago(call["expires_at"], now) if call["state"] == "pending" else "-",
            json.dumps(call.get("override_args") or call["args"], ensure_ascii=True)[:60],
        )
        for call in calls
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS) - 1)]
    return [
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    ]


def _list(args: argparse.Namespace) -> int:
    states = args.state or (HISTORY_STATES if args.history else "pending")
    params = [f"state={states}"] + ([f"tool={args.tool}"] if args.tool else [])
    data = api_request(args, "GET", "/api/approvals?" + "&".join(params))
    of = f" of {args.tool}" if args.tool else ""
    kind = "decided" if states == HISTORY_STATES else states.replace(",", " or ")
    rows = history_table if args.history else table
    empty = f"no {kind} approvals{of}"
    return print_listing(args, data["items"], empty, lambda items: rows(items, time.time()))


def _show(args: argparse.Namespace) -> int:
    call = api_request(args, "GET", f"/api/approvals/{args.id}")
    print(json.dumps(call, indent=2) if args.json else details(call, time.time()))
    return 0


def _approval_extras(args: argparse.Namespace) -> dict[str, Any]:
    """``approve``'s grant and break-glass options as decision-body fields."""
    body: dict[str, Any] = {}
    if getattr(args, "grant", None):
        grant: dict[str, Any] = {"scope": args.grant, "principal": args.principal}
        if args.duration is not None:
            grant["duration"] = args.duration
        body["grant"] = grant
    elif getattr(args, "duration", None) is not None or getattr(args, "principal", False):
        raise ApiError("--for and --principal go with --grant session|tool")
    if getattr(args, "break_glass", False):
        body |= {"break_glass": True, "reason": args.reason or ""}
    elif getattr(args, "reason", None):
        raise ApiError("--reason goes with --break-glass")
    return body


def _decide(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"decision": args.decision, **_approval_extras(args)}
    if getattr(args, "message", None):
        body["message"] = args.message
    if getattr(args, "text", None) is not None:
        body["message"] = args.text
    if getattr(args, "args", None) is not None:
        try:
            body["args"] = json.loads(args.args)
        except json.JSONDecodeError as exc:
            raise ApiError(f"--args is not valid JSON: {exc.msg}") from None
    call = api_request(args, "POST", f"/api/approvals/{args.id}/decision", body)
    print(_decided_line(call, args))
    return 0


def _decided_line(call: dict[str, Any], args: argparse.Namespace) -> str:
    """What a decision did: decided, a stage vote recorded, a grant made."""
    if call["state"] == "pending" and call.get("stages"):
        stage = call["stage"]
        votes = sum(1 for vote in call["votes"] if vote["stage"] == stage)
        needed = call["stages"][stage]["min"]
        return (
            f"{call['id']}: vote recorded; pending, stage {stage + 1} of {len(call['stages'])} "
            f"has {votes} of {needed} votes"
        )
    line = f"{call['id']}: {call['state']} ({call['decision']} by {call['decided_by']})"
    if getattr(args, "break_glass", False):
        line += " -- break-glass, on record"
    if call.get("grant_id"):
        line += f"; grant {call['grant_id']} (lockgate grants revoke {call['grant_id']})"
    return line


def watch_line(event: Event) -> str:
    """One line per held call and per decision, with the command that decides it."""
    data = event.data
    id, tool = data.get("approval_id") or data.get("pending_id"), data.get("tool")
    if event.type == "tool.approval.requested":
        rule = (data.get("decision") or {}).get("rule_id") or "default"
        return (
            f"{event.time} held {id}: {tool} for {data.get('principal')} (rule {rule}): "
            f"{data.get('reason')} -- approve with: lockgate approvals approve {id}"
        )
    if event.type == "tool.approval.resolved":
        return (
            f"{event.time} {data.get('decision')} {id}: {tool} by {data.get('decided_by')} "
            f"via {data.get('channel')}"
        )
    if event.type == "tool.approval.vote":
        return (
            f"{event.time} vote {id}: {tool} by {data.get('by')}, stage {data.get('stage', 0) + 1}"
            f" of {data.get('stages')} has {data.get('votes')} of {data.get('needed')}"
        )
    if event.type == "tool.approval.break_glass":
        return f"{event.time} break-glass {id}: {tool} by {data.get('by')}: {data.get('reason')}"
    return format_event(event)


def _watch(args: argparse.Namespace) -> int:
    headers = approver_headers(args)
    url = args.url.rstrip("/") + "/api/events"
    params = {"types": "tool.approval.*,tool.deferred"}
    stream = functools.partial(stream_events, line_of=watch_line)
    try:
        return anyio.run(stream, url, params, headers, args, sys.stdout)
    except Exception as exc:  # refused token, bad URL: one line, no traceback
        raise ApiError(str(exc)) from None


def _approve_options(approve: argparse.ArgumentParser) -> None:
    approve.add_argument(
        "--grant",
        choices=("session", "tool"),
        help="also allow later calls of this rule: in the caller's session, or of the tool",
    )
    approve.add_argument(
        "--for",
        dest="duration",
        metavar="DURATION",
        help="how long the grant lasts: 30m, 1h, seconds (default: the rule's grant_max)",
    )
    approve.add_argument(
        "--principal", action="store_true", help="--grant tool: only this call's caller"
    )
    approve.add_argument(
        "--break-glass",
        action="store_true",
        help="approve at once, skipping remaining stages (needs --reason; on record)",
    )
    approve.add_argument("--reason", help="--break-glass: why it cannot wait")


def register(subparsers: Any) -> None:
    """Add ``approvals list|show|watch|stats|approve|deny|edit|respond``."""
    approvals = subparsers.add_parser("approvals", help="list and decide held calls")
    commands = approvals.add_subparsers(dest="approvals_command", required=True, metavar="ACTION")
    listing = commands.add_parser("list", help="list approvals")
    listing.add_argument(
        "--state", help="states, comma-separated (default: pending; --history: every decided)"
    )
    listing.add_argument(
        "--history",
        action="store_true",
        help="decided calls: who decided, and whether the call then ran and how it ended",
    )
    listing.add_argument("--tool", help="only this tool")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=_list)
    show = commands.add_parser(
        "show", help="one approval: tool, arguments, caller, rule and reason, decision, outcome"
    )
    show.add_argument("id")
    show.add_argument("--json", action="store_true", help="the record as JSON (unix times)")
    show.set_defaults(func=_show)
    for name, extra in (
        ("approve", None),
        ("deny", "--message"),
        ("edit", "--args"),
        ("respond", "--text"),
    ):
        sub = commands.add_parser(name, help=f"{name} a pending call")
        sub.add_argument("id")
        if extra:
            sub.add_argument(extra, required=name != "deny", help=f"{name}: {extra[2:]}")
        sub.set_defaults(func=_decide, decision=name)
    _approve_options(commands.choices["approve"])
    watch = commands.add_parser("watch", help="print held calls and decisions as they happen")
    watch.add_argument("--json", action="store_true", help="print each CloudEvent as JSON")
    watch.add_argument("-n", "--count", type=int, help="exit after this many events")
    watch.set_defaults(func=_watch)
    register_stats(commands)
    for sub in (
        watch,
        listing,
        show,
        *[commands.choices[n] for n in ("approve", "deny", "edit", "respond")],
    ):
        connection_options(sub)
