"""Helpers of the events end-to-end suite: the gateway config, clients, and real event receivers.

Imported by module name (``import events_e2e_support``): pytest puts this directory on
``sys.path``. Every peer is real: the gateway served by uvicorn or run as ``lockgate stdio`` /
``lockgate serve`` subprocesses, `mcp.Client` in both eras, a webhook receiver under uvicorn
that checks Standard Webhooks signatures, SSE read with `httpx2`, the audit log on disk.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from paths import HARNESS, TESTS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from support import serve_asgi, write_config

from gateway.events.bus import Subscription
from gateway.events.model import Event
from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets._sdk_compat import create_mcp_http_client

HERE = TESTS / "e2e" / "events"
VAULT = str(HARNESS / "vault_server.py")
POLICY = str(HERE / "fixtures" / "policy.yaml")
CLI = (sys.executable, "-m", "gateway.cli")

AGENT = "agent:e2e"
AGENT_TOKEN = "events-e2e-agent-token"
SUBSCRIBER = "svc:siem"
SUBSCRIBER_TOKEN = "events-e2e-subscriber-token"
APPROVER = "user:alice"
APPROVER_TOKEN = "events-e2e-approver-token"
WEBHOOK_KEY = b"events-e2e webhook key, 32 bytes"
WEBHOOK_SECRET = "whsec_" + base64.b64encode(WEBHOOK_KEY).decode()
"""A Standard Webhooks secret: ``whsec_`` and the base64 of the HMAC key."""

ECHO = "vault__echo"
"""Allowed by rule ``echo-allowed``."""
ALLOWED = {"effect": "allow", "rule_id": "echo-allowed"}
DENIED_TOOL = "vault__erase"
"""Denied by rule ``no-erase``."""
DENY_MESSAGE = "Erasing is not allowed through this gateway."


def e2e_config(directory: Path, *, webhook: str | None = None, port: int | None = None) -> Path:
    """A gateway config in ``directory``: the vault upstream, the suite's policy, tokens, audit.

    Args:
        directory: Holds the config, the audit log (``audit.db``) and the pending store.
        webhook: URL of a webhook receiving ``tool.*`` events, signed with `WEBHOOK_SECRET`.
        port: ``listen.port`` (for ``lockgate serve``).
    """
    vault = {"name": "vault", "transport": "stdio", "command": sys.executable, "args": [VAULT]}
    events: dict[str, Any] = {"audit": {"enabled": True, "path": "audit.db"}}
    if webhook is not None:
        events["webhooks"] = [
            {
                "url": webhook,
                "events": ["tool.*"],
                "secret": WEBHOOK_SECRET,
                "allow_private": True,
                "backoff": 0.05,
                "timeout": 5,
            }
        ]
    sections: dict[str, Any] = {
        "policies": {"files": [POLICY]},
        "auth": {
            "agents": [{"id": AGENT, "token": AGENT_TOKEN}],
            "subscribers": [{"id": SUBSCRIBER, "token": SUBSCRIBER_TOKEN}],
            "approvers": [{"id": APPROVER, "token": APPROVER_TOKEN, "roles": ["security"]}],
        },
        "approvals": {"store": "sqlite", "path": "pending.db"},
        "events": events,
    }
    if port is not None:
        sections["listen"] = {"host": "127.0.0.1", "port": port}
    return write_config(directory, [vault], **sections)


def audit_db(config: Path) -> Path:
    """The audit log of a config written by `e2e_config`."""
    return config.parent / "audit.db"


def audit_bytes(config: Path) -> bytes:
    """Every byte SQLite keeps for the audit log (the database and any WAL / journal files)."""
    return b"".join(p.read_bytes() for p in sorted(config.parent.glob("audit.db*")))


@dataclass(frozen=True)
class Served:
    """A gateway in this process, served over HTTP by uvicorn."""

    gateway: Gateway
    base: str

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"


@contextlib.asynccontextmanager
async def served(config: Path) -> AsyncIterator[Served]:
    """The gateway of ``config`` under uvicorn (the app's lifespan enters the gateway)."""
    gateway = Gateway.from_config(config)
    async with serve_asgi(build_app(gateway)) as base:
        yield Served(gateway, base)


@contextlib.asynccontextmanager
async def http_client(url: str, mode: str) -> AsyncIterator[Client]:
    """An `mcp.Client` on the gateway's ``/mcp`` as the suite's agent."""
    http = create_mcp_http_client(
        headers={"Authorization": f"Bearer {AGENT_TOKEN}"}, timeout=httpx2.Timeout(30, read=60)
    )
    async with http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
            yield client


@contextlib.asynccontextmanager
async def stdio_client(config: Path, mode: str) -> AsyncIterator[Client]:
    """An `mcp.Client` on ``lockgate stdio`` (a subprocess) as the suite's agent.

    Leaving the block closes stdin; the gateway then exits, draining its sinks.
    """
    params = StdioServerParameters(
        command=sys.executable,
        args=[*CLI[1:], "stdio", "-c", str(config)],
        env={"LOCKGATE_TOKEN": AGENT_TOKEN},
    )
    async with Client(params, mode=mode, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
        yield client


@contextlib.asynccontextmanager
async def api(base: str, token: str | None) -> AsyncIterator[httpx2.AsyncClient]:
    """An HTTP client on the gateway holding ``token`` (None: no Authorization header)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx2.Timeout(10, read=30)
    async with httpx2.AsyncClient(base_url=base, headers=headers, timeout=timeout) as client:
        yield client


class BusReader:
    """Reads one `gw.events` subscription on demand, keeping everything it read."""

    def __init__(self, subscription: Subscription) -> None:
        self.subscription = subscription
        self.events: list[Event] = []

    async def until(self, wanted: Callable[[Event], bool]) -> Event:
        """Read until an event is ``wanted`` and return it."""
        async for event in self.subscription:
            self.events.append(event)
            if wanted(event):
                return event
        raise AssertionError("the subscription ended before the wanted event")

    async def until_result(self) -> Event:
        """Read until the next ``tool.result``."""
        return await self.until(lambda e: e.type == "tool.result")


@dataclass
class Delivery:
    """One webhook request as received."""

    headers: dict[str, str]
    body: bytes
    envelope: dict[str, Any]


def verify_standard_webhook(
    secret: str, headers: Mapping[str, str], body: bytes, *, tolerance: float = 300
) -> bool:
    """Whether ``body`` carries a valid Standard Webhooks signature for ``secret``.

    Written from the specification (``whsec_`` + base64 key; HMAC-SHA256 over
    ``"{id}.{timestamp}.{body}"``; ``v1,<base64>`` signatures, space separated), not from the
    gateway's code, so it checks the gateway against the standard rather than against itself.
    """
    key = base64.b64decode(secret.removeprefix("whsec_"))
    msg_id = headers.get("webhook-id", "")
    stamp = headers.get("webhook-timestamp", "")
    if not msg_id or not stamp.isdigit() or abs(time.time() - int(stamp)) > tolerance:
        return False
    signed = f"{msg_id}.{stamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    for signature in headers.get("webhook-signature", "").split():
        version, _, value = signature.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return True
    return False


@dataclass
class WebhookReceiver:
    """A real webhook endpoint (``POST /hook``) that keeps every correctly signed delivery.

    Attributes:
        deliveries: Accepted deliveries, in arrival order.
        rejected: Requests refused for a missing or wrong signature.
    """

    secret: str = WEBHOOK_SECRET
    deliveries: list[Delivery] = field(default_factory=list)
    rejected: int = 0
    _arrived: anyio.Event | None = None

    @property
    def envelopes(self) -> list[dict[str, Any]]:
        return [d.envelope for d in self.deliveries]

    @property
    def app(self) -> Starlette:
        return Starlette(routes=[Route("/hook", self._receive, methods=["POST"])])

    async def _receive(self, request: Request) -> Response:
        body = await request.body()
        headers = {k.lower(): v for k, v in request.headers.items()}
        if not verify_standard_webhook(self.secret, headers, body):
            self.rejected += 1
            return Response(status_code=401)
        envelope = json.loads(body)
        self.deliveries.append(Delivery(headers, body, envelope))
        if self._arrived is not None:
            self._arrived.set()
        return Response(status_code=204)

    async def until(self, wanted: Callable[[Mapping[str, Any]], bool]) -> dict[str, Any]:
        """Wait for a delivered envelope that is ``wanted`` and return it."""
        while True:
            for envelope in self.envelopes:
                if wanted(envelope):
                    return envelope
            self._arrived = anyio.Event()
            await self._arrived.wait()


@contextlib.asynccontextmanager
async def webhook_receiver() -> AsyncIterator[tuple[WebhookReceiver, str]]:
    """A `WebhookReceiver` under uvicorn; yields it and its URL."""
    receiver = WebhookReceiver()
    async with serve_asgi(receiver.app) as base:
        yield receiver, f"{base}/hook"


def envelope(event: Event) -> dict[str, Any]:
    """The CloudEvent of ``event`` as it goes over the wire (JSON round trip)."""
    parsed: dict[str, Any] = json.loads(event.json_bytes)
    return parsed


@dataclass
class Observed:
    """A client on one face of a gateway and what the gateway published about its calls.

    Over HTTP the gateway runs in this process and events are read from ``gw.events``; over stdio
    it is a subprocess and events are what its webhook delivered. Either way `events` are
    CloudEvent envelopes after a JSON round trip.
    """

    config: Path
    client: Client
    receiver: WebhookReceiver | None
    _count: Callable[[int], Any]
    _seen: Callable[[], list[dict[str, Any]]]

    async def results(self, count: int) -> None:
        """Wait until ``count`` ``tool.result`` events were observed."""
        await self._count(count)

    @property
    def events(self) -> list[dict[str, Any]]:
        return self._seen()


def _results(items: list[dict[str, Any]]) -> int:
    return sum(1 for item in items if item["type"] == "tool.result")


@contextlib.asynccontextmanager
async def observed(transport: str, mode: str, directory: Path) -> AsyncIterator[Observed]:
    """A gateway from `e2e_config` reached over ``transport`` (``http``/``stdio``) in ``mode``.

    Leaving the block stops the gateway, so its audit log is complete and closed afterwards.
    """
    async with contextlib.AsyncExitStack() as stack:
        receiver: WebhookReceiver | None = None
        if transport == "http":
            config = e2e_config(directory)
            rig = await stack.enter_async_context(served(config))
            sub = await stack.enter_async_context(rig.gateway.events.subscribe(["tool.*"]))
            reader = BusReader(sub)

            def seen() -> list[dict[str, Any]]:
                return [envelope(e) for e in reader.events]

            async def count(n: int) -> None:
                while _results(seen()) < n:
                    await reader.until_result()

            client = await stack.enter_async_context(http_client(rig.mcp_url, mode))
        else:
            hooks, hook = await stack.enter_async_context(webhook_receiver())
            receiver = hooks
            config = e2e_config(directory, webhook=hook)

            def seen() -> list[dict[str, Any]]:
                return hooks.envelopes

            async def count(n: int) -> None:
                await hooks.until(lambda _: _results(hooks.envelopes) >= n)

            client = await stack.enter_async_context(stdio_client(config, mode))
        yield Observed(config, client, receiver, count, seen)


class Seen(list[dict[str, Any]]):
    """The events a stream delivered so far; `until` waits for a condition on them."""

    def __init__(self) -> None:
        super().__init__()
        self._more = anyio.Event()

    def add(self, event: dict[str, Any]) -> None:
        self.append(event)
        self._more.set()
        self._more = anyio.Event()

    async def until(self, condition: Callable[[list[dict[str, Any]]], bool]) -> None:
        while not condition(self):
            await self._more.wait()


@contextlib.asynccontextmanager
async def watching(base: str, token: str, path: str = "/api/events") -> AsyncIterator[Seen]:
    """Events of the stream ``token`` reads (at ``path``), collected while inside."""
    seen = Seen()
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(base_url=base, timeout=30) as http,
        anyio.create_task_group() as tg,
    ):
        started = anyio.Event()

        async def read() -> None:
            async with http.stream("GET", path, headers=headers) as response:
                assert response.status_code == 200
                started.set()
                async for line in response.aiter_lines():
                    if line.startswith("data: "):
                        seen.add(json.loads(line.removeprefix("data: ")))

        tg.start_soon(read)
        await started.wait()
        yield seen
        tg.cancel_scope.cancel()


LOCAL_TOOLS = '''\
def held(note: str) -> str:
    """Needs an operator."""
    return note


def free(note: str) -> str:
    """Runs at once."""
    return note


def pay(note: str) -> str:
    """Needs finance."""
    return note
'''
"""Local Python tools ``local__held``, ``local__free`` and ``local__pay``; policies decide."""


def local_config(
    directory: Path, policy: str, auth: dict[str, Any], approvals: dict[str, Any] | None = None
) -> Path:
    """A gateway config: the `LOCAL_TOOLS` server, ``policy``, ``auth`` (memory approvals
    unless ``approvals`` says)."""
    (directory / "local_tools.py").write_text(LOCAL_TOOLS, encoding="utf-8")
    (directory / "policy.yaml").write_text(policy, encoding="utf-8")
    functions = [f"local_tools:{name}" for name in ("held", "free", "pay")]
    local = {"name": "local", "transport": "python", "functions": functions}
    return write_config(
        directory,
        [local],
        policies={"files": [str(directory / "policy.yaml")]},
        approvals=approvals or {"store": "memory"},
        auth=auth,
    )
