"""``lockgate events tail`` and ``lockgate audit verify|tail``.

Exit codes: 0 success; 1 the audit chain is broken or the event stream failed; 2 a user error
(missing file, bad URL, refused token). Errors are one readable line on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TextIO

import anyio
import httpx2

from gateway.audit.log import AuditEntry, read_tail
from gateway.audit.verify import VerifyReport, verify
from gateway.cli.config_file import CONFIG_VARIABLE, DEFAULT_CONFIG, config_path
from gateway.cli.errors import UsageError
from gateway.config.loader import read_config
from gateway.config.model import GatewayConfig
from gateway.events.model import Event
from gateway.postgres.settings import PostgresSettings
from toolsets.errors import LockgateError

if TYPE_CHECKING:
    from gateway.postgres.database import Database

__all__ = ["DEFAULT_AUDIT_DB", "DEFAULT_URL", "format_event", "main", "register"]

DEFAULT_AUDIT_DB: Final = "var/audit.db"
DEFAULT_URL: Final = "http://127.0.0.1:8765"
EVENTS_PATH: Final = "/api/events"
NOT_HERE: Final = (
    "a `lockgate call` runs a gateway of its own, in its own process: its events are in the "
    "audit log (`lockgate audit tail`), not on this stream"
)

Command = Callable[[argparse.Namespace], int]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``events`` and ``audit`` commands; each sets ``func(args) -> exit code``."""
    events = subparsers.add_parser("events", help="watch a running gateway's events")
    events_commands = events.add_subparsers(dest="events_command", required=True)
    tail = events_commands.add_parser(
        "tail",
        help="stream a running gateway's events as they happen",
        description=f"Stream the events of the gateway serving --url ({NOT_HERE}).",
    )
    tail.add_argument("--types", default="*", help="comma-separated type patterns (tool.*)")
    tail.add_argument(
        "--url",
        default=os.environ.get("LOCKGATE_URL", DEFAULT_URL),
        help=f"gateway URL (default: LOCKGATE_URL, else {DEFAULT_URL})",
    )
    tail.add_argument("--token", help="subscriber or approver token (default: $LOCKGATE_TOKEN)")
    tail.add_argument("--json", action="store_true", help="print each CloudEvent as JSON")
    tail.add_argument("-n", "--count", type=int, help="exit after this many events")
    tail.set_defaults(func=_guarded(_events_tail))

    audit = subparsers.add_parser("audit", help="check and read the audit log")
    audit_commands = audit.add_subparsers(dest="audit_command", required=True)
    check = audit_commands.add_parser("verify", help="recompute the hash chain")
    _audit_source(check)
    check.set_defaults(func=_guarded(_audit_verify))
    last = audit_commands.add_parser("tail", help="print the last entries")
    _audit_source(last)
    last.add_argument("-n", type=int, default=20, help="how many entries (default 20)")
    last.add_argument("--json", action="store_true", help="one JSON object per line")
    last.set_defaults(func=_guarded(_audit_tail))


def _audit_source(parser: argparse.ArgumentParser) -> None:
    """``--db`` or ``-c`` (one of them): the log a command reads."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--db", metavar="PATH", help="an audit log file (SQLite); else the config's log"
    )
    source.add_argument(
        "--config",
        "-c",
        metavar="PATH",
        help="the log this gateway config writes (with storage.backend: postgres, the chain "
        f"every replica shares, in the database); default: ${CONFIG_VARIABLE}, else "
        f"{DEFAULT_CONFIG}",
    )


def _guarded(command: Command) -> Command:
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except (UsageError, FileNotFoundError, sqlite3.DatabaseError, LockgateError) as exc:
            print(f"lockgate: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            return 130

    return run


def _audit_verify(args: argparse.Namespace) -> int:
    if args.db is not None:
        report = verify(args.db)
    else:
        report = anyio.run(_verify_configured, _audit_config(args))
    if report.ok:
        print(f"ok: {report.entries} entries, head {report.head_hash}")
        return 0
    print(f"BROKEN at entry {report.first_bad_seq}: {report.problem}", file=sys.stderr)
    return 1


def _audit_config(args: argparse.Namespace) -> GatewayConfig:
    """The config whose audit log an ``audit`` command reads (``--db`` not given): found as
    every command finds it, and read with the checks of the file alone (the log is readable
    where the gateway's commands or functions are not)."""
    return read_config(config_path(args.config, alternative=", or --db PATH for a log file"))


async def _verify_configured(config: GatewayConfig) -> VerifyReport:
    """Verify the audit log ``config`` writes."""
    if config.storage.backend != "postgres":
        return verify(config.resolve(config.events.audit.path))
    from gateway.postgres.audit import verify_database  # the postgres extra (asyncpg)

    async with _shared_database(config) as database:
        return await verify_database(database)


def _audit_tail(args: argparse.Namespace) -> int:
    count = max(args.n, 0)
    if args.db is not None:
        entries = read_tail(args.db, count)
    else:
        entries = anyio.run(_tail_configured, _audit_config(args), count)
    for entry in entries:
        print(json.dumps(entry.to_json(), ensure_ascii=False) if args.json else _audit_line(entry))
    return 0


async def _tail_configured(config: GatewayConfig, count: int) -> list[AuditEntry]:
    """The last ``count`` entries of the audit log ``config`` writes, oldest first."""
    if config.storage.backend != "postgres":
        return read_tail(config.resolve(config.events.audit.path), count)
    from gateway.postgres.audit import PostgresAuditLog  # the postgres extra (asyncpg)

    async with _shared_database(config) as database:
        return await PostgresAuditLog(database).tail(count)


@contextlib.asynccontextmanager
async def _shared_database(config: GatewayConfig) -> AsyncIterator[Database]:
    """The PostgreSQL database ``config`` names, closed after."""
    from gateway.postgres.database import Database  # the postgres extra (asyncpg)

    database = Database(PostgresSettings.from_config(config))
    try:
        yield database
    finally:
        await database.close()


def _audit_line(entry: AuditEntry) -> str:
    data = entry.body.get("data", entry.body) if isinstance(entry.body, Mapping) else {}
    extra = _summary(entry.kind, data) if isinstance(data, Mapping) else ""
    who = entry.principal or "-"
    return f"{entry.seq:>6} {entry.ts} {entry.kind:<24} {entry.tool or '-'} by {who}{extra}"


def format_event(event: Event) -> str:
    """One readable line for ``event``."""
    data = event.data
    head = f"{event.time} {event.type:<24}"
    if "tool" in data:
        head += f" {data['tool']} call={data.get('call_id')} by {data.get('principal')}"
    elif "server" in data:
        head += f" {data['server']}"
    return head + _summary(event.type, data)


def _summary(kind: str, data: Mapping[str, Any]) -> str:
    decision = data.get("decision")
    parts: list[str] = []
    if isinstance(decision, Mapping):
        parts.append(f"{decision.get('effect')}/{decision.get('rule_id') or 'default'}")
        shadow = decision.get("shadow") or []
        if isinstance(shadow, list) and shadow:
            matches = (
                f"{m.get('effect')}/{m.get('rule_id')}" for m in shadow if isinstance(m, dict)
            )
            parts.append(f"shadow={','.join(matches)}")
    elif decision is not None:
        parts.append(f"{decision} by {data.get('decided_by')} via {data.get('channel')}")
    for key in ("status", "missed", "duration_ms", "message", "approval_id"):
        if data.get(key) is not None:
            parts.append(f"{key}={data[key]}")
    if data.get("is_error"):
        parts.append("ERROR")
    if "args" in data:
        parts.append("args=" + json.dumps(data["args"], ensure_ascii=False)[:200])
    return "".join(f" {p}" for p in parts)


def _events_tail(args: argparse.Namespace) -> int:
    token = args.token or os.environ.get("LOCKGATE_TOKEN")
    url = args.url.rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--url must be an http(s) URL, got {args.url!r}")
    if not url.endswith(EVENTS_PATH):
        url += EVENTS_PATH
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if sys.stderr.isatty():  # for people; scripts read only events (and errors) here
        print(f"following the events of the gateway at {url} ({NOT_HERE})", file=sys.stderr)
    return anyio.run(stream_events, url, {"types": args.types}, headers, args, sys.stdout)


async def stream_events(
    url: str,
    params: dict[str, str],
    headers: dict[str, str],
    args: argparse.Namespace,
    out: TextIO,
    *,
    line_of: Callable[[Event], str] = format_event,
) -> int:
    """Print the gateway's events at ``url`` (``args.json``: as CloudEvents; ``args.count``:
    stop after that many) until it ends; the exit code."""
    seen = 0
    timeout = httpx2.Timeout(10.0, read=None)
    try:
        async with (
            httpx2.AsyncClient(timeout=timeout) as client,
            client.stream("GET", url, params=params, headers=headers) as response,
        ):
            if response.status_code in (401, 403):
                raise UsageError(f"{url} refused the token (HTTP {response.status_code})")
            if response.status_code != 200:
                raise UsageError(f"{url} answered HTTP {response.status_code}")
            async for message in httpx2.EventSource(response):
                if not message.data:
                    continue
                event = Event.from_cloudevent(json.loads(message.data))
                line = event.json_bytes.decode() if args.json else line_of(event)
                print(line, file=out, flush=True)
                seen += 1
                if args.count is not None and seen >= args.count:
                    return 0
    except httpx2.HTTPError as exc:
        print(f"lockgate: cannot read events from {url}: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the event and audit commands on their own (``python -m gateway.cli.events``)."""
    parser = argparse.ArgumentParser(prog="lockgate")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    func: Command = args.func
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
