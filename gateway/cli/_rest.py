"""REST-client plumbing shared by the approver commands (``approvals``, ``grants``, ``pins``)."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx2

from gateway.cli.errors import ApiError

DEFAULT_URL = "http://127.0.0.1:8765"


def connection_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--url`` and ``--token`` to one subcommand."""
    parser.add_argument("--url", default=os.environ.get("LOCKGATE_URL", DEFAULT_URL))
    parser.add_argument("--token", help="approver token (default: $LOCKGATE_APPROVER_TOKEN)")


def approver_headers(args: argparse.Namespace) -> dict[str, str]:
    """The approver's bearer token and the ``cli`` channel, as request headers."""
    token = args.token or os.environ.get("LOCKGATE_APPROVER_TOKEN")
    if not token:
        raise ApiError("an approver token is needed: --token or LOCKGATE_APPROVER_TOKEN")
    return {"Authorization": f"Bearer {token}", "X-Lockgate-Channel": "cli"}


def api_request(args: argparse.Namespace, method: str, path: str, body: Any = None) -> Any:
    """One call to the gateway's REST API; its JSON body, or :class:`ApiError`."""
    headers = approver_headers(args)
    try:
        with httpx2.Client(base_url=args.url, headers=headers, timeout=30.0) as client:
            response = client.request(method, path, json=body)
    except httpx2.TransportError as exc:
        fix = "start `lockgate serve`, or point at it with --url or LOCKGATE_URL"
        raise ApiError(f"cannot reach the gateway at {args.url} ({exc}): {fix}") from None
    is_json = response.headers.get("content-type", "").startswith("application/json")
    data = response.json() if is_json else {}
    if response.status_code >= 400:
        body = data if isinstance(data, dict) else {}
        detail = body.get("detail", response.text)
        raise ApiError(f"{response.status_code} {body.get('error', '')}: {detail}")
    return data


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


def iso(seconds: float) -> str:
    """``seconds`` (unix time) as ISO 8601 UTC."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows (the header first) as left-aligned columns."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    cells = (zip(row, widths, strict=True) for row in rows)
    return ["  ".join(c.ljust(w) for c, w in line).rstrip() for line in cells]


def print_listing(
    args: argparse.Namespace,
    items: list[dict[str, Any]],
    empty: str,
    table: Callable[[list[dict[str, Any]]], list[str]],
) -> int:
    """A list command's output: JSON with ``--json``, else ``empty`` or the table."""
    if args.json:
        print(json.dumps(items, indent=2))
    elif not items:
        print(empty)
    else:
        print("\n".join(table(items)))
    return 0
