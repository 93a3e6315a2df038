"""The refusal suite's gateway (tests/gateway/refusals): the recorder, echo and faulty upstreams
over stdio, the policy of ``tests/gateway/refusals/fixtures/policy.yaml``, memory approvals,
served over HTTP by uvicorn on 127.0.0.1; clients of both eras, each in a session of its own."""

from __future__ import annotations

import contextlib
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway_faces import Face, open_client
from mcp import Client
from paths import HARNESS
from support import echo_upstream, serve_asgi, write_config

from gateway.gateway import Gateway
from gateway.http.app import build_app
from gateway.mcp.calls import SESSION_HEADER

POLICY = HARNESS.parent / "gateway" / "refusals" / "fixtures" / "policy.yaml"
RECORDER = HARNESS / "recorder_server.py"
FAULTY = HARNESS / "upstreams" / "faulty_server.py"


@dataclass(frozen=True)
class Served:
    """A running gateway and where its MCP endpoint is."""

    gateway: Gateway
    config: Path
    url: str


def refusal_config(directory: Path, *, echo: dict[str, Any] | None = None, **sections: Any) -> Path:
    """The suite's gateway config in ``directory`` (``echo``: options of the echo server's
    entry; ``sections``: more config sections, ``approvals`` merged into memory approvals)."""
    recorder = {
        "name": "recorder",
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(RECORDER), "--log", str(directory / "executions.jsonl")],
    }
    faulty = {"name": "faulty", "command": sys.executable, "args": [str(FAULTY)]}
    approvals = {"store": "memory", **sections.pop("approvals", {})}
    sections.setdefault("startup_wait", 30)  # three upstreams start on a busy machine
    return write_config(
        directory,
        [recorder, echo_upstream(**(echo or {})), faulty],
        policies={"files": [str(POLICY)]},
        approvals=approvals,
        **sections,
    )


@contextlib.asynccontextmanager
async def serve(config: Path) -> AsyncIterator[Served]:
    """The gateway of ``config`` under uvicorn."""
    gateway = Gateway.from_config(config)
    async with serve_asgi(build_app(gateway)) as base:
        yield Served(gateway, config, f"{base}/mcp")


@contextlib.asynccontextmanager
async def connect(served: Served, mode: str) -> AsyncIterator[Client]:
    """An `mcp.Client` over HTTP in ``mode``'s era, in a session of its own."""
    headers = {SESSION_HEADER: f"refusals-{uuid.uuid4().hex}"}
    face = Face("http", mode)
    async with open_client(face, config=served.config, url=served.url, headers=headers) as client:
        yield client
