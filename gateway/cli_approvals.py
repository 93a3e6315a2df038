"""``lockgate approvals ...``: approvers act on a running gateway through its REST API."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import httpx2

from toolsets.errors import LockgateError

__all__ = ["register"]

DEFAULT_URL = "http://127.0.0.1:8765"


class ApiError(LockgateError):
    """The gateway refused or could not be reached."""


def _client(args: argparse.Namespace) -> httpx2.Client:
    token = args.token or os.environ.get("LOCKGATE_APPROVER_TOKEN")
    if not token:
        raise ApiError("an approver token is needed: --token or LOCKGATE_APPROVER_TOKEN")
    headers = {"Authorization": f"Bearer {token}", "X-Lockgate-Channel": "cli"}
    return httpx2.Client(base_url=args.url, headers=headers, timeout=30.0)


def _request(args: argparse.Namespace, method: str, path: str, body: Any = None) -> Any:
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


def _line(call: dict[str, Any]) -> str:
    args = json.dumps(call.get("override_args") or call["args"], ensure_ascii=True)
    return f"{call['id']}  {call['state']:9} {call['tool']:32} {call['principal']:18} {args[:80]}"


def _list(args: argparse.Namespace) -> int:
    params = [f"state={args.state}"] + ([f"tool={args.tool}"] if args.tool else [])
    data = _request(args, "GET", "/api/approvals?" + "&".join(params))
    if args.json:
        print(json.dumps(data["items"], indent=2))
    for call in [] if args.json else data["items"]:
        print(_line(call))
    return 0


def _show(args: argparse.Namespace) -> int:
    print(json.dumps(_request(args, "GET", f"/api/approvals/{args.id}"), indent=2))
    return 0


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
    call = _request(args, "POST", f"/api/approvals/{args.id}/decision", body)
    print(f"{call['id']}: {call['state']} ({call['decision']} by {call['decided_by']})")
    return 0


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", default=os.environ.get("LOCKGATE_URL", DEFAULT_URL))
    parser.add_argument("--token", help="approver token (default: $LOCKGATE_APPROVER_TOKEN)")


def register(subparsers: Any) -> None:
    """Add ``approvals list|show|approve|deny|edit|respond``."""
    approvals = subparsers.add_parser("approvals", help="list and decide held calls")
    commands = approvals.add_subparsers(dest="approvals_command", required=True, metavar="ACTION")
    listing = commands.add_parser("list", help="list approvals")
    listing.add_argument("--state", default="pending", help="state filter (default: pending)")
    listing.add_argument("--tool", help="only this tool")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=_list)
    show = commands.add_parser("show", help="one approval with full arguments and reason")
    show.add_argument("id")
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
    for sub in (
        listing,
        show,
        *[commands.choices[n] for n in ("approve", "deny", "edit", "respond")],
    ):
        _common(sub)
