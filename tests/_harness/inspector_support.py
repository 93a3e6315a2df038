"""Support for the content-inspection tests: the recording upstream behind a gateway with
``inspectors:``, its events collected, reached over HTTP in both MCP eras, and an external
inspector on 127.0.0.1. Imported by module name (``import inspector_support``)."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from gateway_faces import Face, open_client
from mcp import Client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from support import serve_asgi, write_config

from gateway.events.model import Event
from gateway.gateway import Gateway
from gateway.http.app import build_app

RECORDER = str(Path(__file__).parent / "recorder_server.py")
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
CARD = "4111 1111 1111 1111"
"""A card number that passes Luhn (the well-known test Visa)."""
BAD_CARD = "4111 1111 1111 1112"
"""The same digits but the last: fails Luhn."""


def recorder_config(
    directory: Path, inspectors: dict[str, Any], **sections: Any
) -> tuple[Path, Path]:
    """A config with the recording upstream as ``rec`` and ``inspectors``; ``(config, log)``."""
    log = directory / "received.jsonl"
    server = {
        "name": "rec",
        "transport": "stdio",
        "command": sys.executable,
        "args": [RECORDER, "--log", str(log)],
    }
    sections.setdefault("approvals", {"store": "memory"})
    sections.setdefault("startup_wait", 60)  # a loaded machine may take seconds to spawn it
    return write_config(directory, [server], inspectors=inspectors, **sections), log


def received(log: Path) -> list[dict[str, Any]]:
    """What the upstream received, one entry per executed call."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def payloads(events: list[Event]) -> str:
    """Every event's data as one JSON text (to search for what must never be there)."""
    return "\n".join(json.dumps(event.data, default=str) for event in events)


def of_type(events: list[Event], kind: str) -> list[dict[str, Any]]:
    return [dict(event.data) for event in events if event.type == kind]


@contextlib.asynccontextmanager
async def gateway_client(
    config: Path, face: Face
) -> AsyncIterator[tuple[Client, Gateway, list[Event]]]:
    """``lockgate serve`` in-process, a client on ``face``, and every event it publishes."""
    gateway = Gateway.from_config(config)
    events: list[Event] = []
    remove = gateway.events.add_listener(events.append)
    try:
        async with (
            serve_asgi(build_app(gateway)) as base,
            open_client(face, config=config, url=f"{base}/mcp") as client,
        ):
            yield client, gateway, events
    finally:
        remove()


class Inspector:
    """An external inspector (the documented JSON contract) on 127.0.0.1.

    Finds ``needle`` wherever it is (kind ``secret-word``, action ``redact``) and labels every
    text ``seen``. ``slow``: it answers only once `release` is set (the test sets it on leaving).
    """

    def __init__(self, needle: str = "swordfish", *, slow: bool = False) -> None:
        self.needle = needle
        self.slow = slow
        self.requests: list[dict[str, Any]] = []
        self.release = anyio.Event()

    async def inspect(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        if self.slow:
            await self.release.wait()
        text: str = body["content"]
        start = text.find(self.needle)
        findings = []
        if start >= 0:
            findings.append(
                {"kind": "secret-word", "start": start, "end": start + len(self.needle)}
            )
        return JSONResponse({"labels": ["seen"], "findings": findings, "action": "redact"})

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """Serve it; yields its URL."""
        app = Starlette(routes=[Route("/inspect", self.inspect, methods=["POST"])])
        try:
            async with serve_asgi(app) as base:
                try:
                    yield f"{base}/inspect"
                finally:
                    self.release.set()
        finally:
            self.release.set()
