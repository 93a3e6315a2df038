"""``lockgate approvals ...``: approvers act on a running gateway through its REST API."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from typing import Any

import anyio
import httpx2

from gateway.cli_events import format_event, stream_events
from gateway.events.model import Event
from toolsets.errors import LockgateError

__all__ = ["ApiError", "api_request", "connection_options", "register"]

DEFAULT_URL = "http://127.0.0.1:8765"


class ApiError(LockgateError):
    """The gateway refused or could not be reached."""


def _client(args: argparse.Namespace) -> httpx2.Client:
    token = args.token or os.environ.get("LOCKGATE_APPROVER_TOKEN")
    if not token:
        raise ApiError("an approver token is needed: --token or LOCKGATE_APPROVER_TOKEN")
    headers = {"Authorization": f"Bearer {token}", "X-Lockgate-Channel": "cli"}
    return httpx2.Client(base_url=args.url, headers=headers, timeout=30.0)


def api_request(args: argparse.Namespace, method: str, path: str, body: Any = None) -> Any:
    try:
        with _client(args) as client:
            response = client.request(method, path, json=body)
    except httpx2.TransportError as exc:
        raise ApiError(f"cannot reach the gateway at {args.url}: {exc}") from None
    is_json = response.headers.get("content-type", "").startswith("application/json")
    data = response.json() if is_json else {}
    if response.status_code >= 400:
        body = data if isinstance(data, dict) else {}
        detail = body.get("detail", response.text)
        raise ApiError(f"{response.status_code} {body.get('error', '')}: {detail}")
    return data


COLUMNS = ("ID", "STATE", "TOOL", "CALLER", "REQUESTED", "EXPIRES", "ARGS")
TIMES = ("created_at", "updated_at", "expires_at")


def ago(seconds: float, now: float) -> str:
    """``seconds`` (unix time) relative to ``now``: ``3m ago``, ``in 7m``."""
    delta = seconds - now
    span = abs(delta)
    text = next(
        (
            f"{int(span // unit)}{name}"
            for unit, name in ((86400, "d"), (3600, "h"), (60, "m"))
            if span >= unit
        ),
        f"{int(span)}s",
    )
    return f"in {text}" if delta > 0 else f"{text} ago"


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
    params = [f"state={args.state}"] + ([f"tool={args.tool}"] if args.tool else [])
    data = api_request(args, "GET", "/api/approvals?" + "&".join(params))
    if args.json:
        print(json.dumps(data["items"], indent=2))
    elif not data["items"]:
        of = f" of {args.tool}" if args.tool else ""
        print(f"no {args.state.replace(',', ' or ')} approvals{of}")
    else:
        print("\n".join(table(data["items"], time.time())))
    return 0


def _show(args: argparse.Namespace) -> int:
    call = api_request(args, "GET", f"/api/approvals/{args.id}")
    if not args.json:  # for people: ISO times, and how long it may still wait
        if call["state"] == "pending":
            call["time_left"] = ago(call["expires_at"], time.time()).removeprefix("in ")
        call.update({key: _iso(call[key]) for key in TIMES})
    print(json.dumps(call, indent=2))
    return 0


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _decide(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"decision": args.decision}
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
    print(f"{call['id']}: {call['state']} ({call['decision']} by {call['decided_by']})")
    return 0


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
    return format_event(event)


def _watch(args: argparse.Namespace) -> int:
    token = args.token or os.environ.get("LOCKGATE_APPROVER_TOKEN")
    if not token:
        raise ApiError("an approver token is needed: --token or LOCKGATE_APPROVER_TOKEN")
    url = args.url.rstrip("/") + "/api/events"
    headers = {"Authorization": f"Bearer {token}", "X-Lockgate-Channel": "cli"}
    params = {"types": "tool.approval.*,tool.deferred"}
    stream = functools.partial(stream_events, line_of=watch_line)
    try:
        return anyio.run(stream, url, params, headers, args, sys.stdout)
    except Exception as exc:  # refused token, bad URL: one line, no traceback
        raise ApiError(str(exc)) from None


def connection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", default=os.environ.get("LOCKGATE_URL", DEFAULT_URL))
    parser.add_argument("--token", help="approver token (default: $LOCKGATE_APPROVER_TOKEN)")


def register(subparsers: Any) -> None:
    """Add ``approvals list|show|watch|approve|deny|edit|respond``."""
    approvals = subparsers.add_parser("approvals", help="list and decide held calls")
    commands = approvals.add_subparsers(dest="approvals_command", required=True, metavar="ACTION")
    listing = commands.add_parser("list", help="list approvals")
    listing.add_argument("--state", default="pending", help="state filter (default: pending)")
    listing.add_argument("--tool", help="only this tool")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=_list)
    show = commands.add_parser("show", help="one approval with full arguments and reason")
    show.add_argument("id")
    show.add_argument("--json", action="store_true", help="the record as stored (unix times)")
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
    watch = commands.add_parser("watch", help="print held calls and decisions as they happen")
    watch.add_argument("--json", action="store_true", help="print each CloudEvent as JSON")
    watch.add_argument("-n", "--count", type=int, help="exit after this many events")
    watch.set_defaults(func=_watch)
    for sub in (
        watch,
        listing,
        show,
        *[commands.choices[n] for n in ("approve", "deny", "edit", "respond")],
    ):
        connection_options(sub)
