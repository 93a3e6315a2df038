"""Support of the connect suite (tests/gateway/credentials/test_connect_*.py): an in-process
HTTP upstream in secret mode that counts its calls, a gateway served on a known port (its
connect links name it), and a browser-less way to follow a link (GET the form, POST the secret).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from credentials_support import AGENTS, credentials_config, secret_http
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import Context, MCPServer
from support import free_port, serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets._sdk_compat import create_mcp_http_client

SERVER = "web"
TOOL = f"{SERVER}__whoami"


@dataclass
class Counted:
    """What the counting upstream saw: one entry per call, the Authorization it carried."""

    calls: list[str | None] = field(default_factory=list)


@contextlib.asynccontextmanager
async def counting_upstream() -> AsyncIterator[tuple[str, Counted]]:
    """An MCP server over streamable HTTP whose ``whoami`` answers (and counts) the
    Authorization header it received; yields its URL and the count."""
    counted = Counted()
    server = MCPServer("web", version="1.0", log_level="WARNING")

    @server.tool()
    def whoami(ctx: Context) -> dict[str, Any]:
        """The Authorization header of this call."""
        headers = getattr(ctx.request_context.request, "headers", None)
        authorization = headers.get("authorization") if headers is not None else None
        counted.calls.append(authorization)
        return {"authorization": authorization}

    async with serve_asgi(server.streamable_http_app(host="127.0.0.1")) as base:
        yield f"{base}/mcp", counted


def connect_config(directory: Path, upstream: str, port: int, **extra: Any) -> Path:
    """The credentials suite's config with ``web`` in secret mode, listening on ``port`` (the
    links name it)."""
    sections: dict[str, Any] = {"listen": {"port": port}, **extra}
    return credentials_config(directory, [secret_http(SERVER, upstream)], **sections)


@contextlib.asynccontextmanager
async def served(config: Path, port: int) -> AsyncIterator[tuple[Gateway, str]]:
    """The gateway of ``config`` served on ``port``; yields it and its base URL."""
    gateway = Gateway.from_config(config)
    async with serve_asgi(build_app(gateway), port) as base:
        yield gateway, base


def new_port() -> int:
    return free_port()


def link_of(result: Any) -> str:
    """The connect link a held call's error result carries."""
    assert result.is_error, result
    url: str = result.meta["lockgate/refusal"]["unblock"]["url"]
    assert "/connect/" in url
    return url


async def follow(link: str, secret: str) -> httpx2.Response:
    """Open ``link`` as a browser would, then post ``secret`` in its form; the last answer."""
    async with httpx2.AsyncClient(timeout=60) as browser:
        form = await browser.get(link)
        if form.status_code != 200:
            return form
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', form.text)
        assert csrf is not None, form.text
        origin = link.split("/connect/", maxsplit=1)[0]
        data = {"csrf": csrf.group(1), "secret": secret}
        return await browser.post(link, data=data, headers={"Origin": origin})


@dataclass
class Opener:
    """A user at an MCP client that declared URL-mode elicitation: each link it is sent, it
    opens and connects with ``secret`` (through the link's form), then accepts."""

    secret: str
    asked: list[types.ElicitRequestURLParams] = field(default_factory=list)
    answers: list[httpx2.Response] = field(default_factory=list)

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), params
        self.asked.append(params)
        self.answers.append(await follow(params.url, self.secret))
        return types.ElicitResult(action="accept")


@contextlib.asynccontextmanager
async def opening_client(
    base: str, mode: str, principal: str, opener: Opener
) -> AsyncIterator[Client]:
    """An MCP client of ``principal`` on the gateway at ``base`` that declares elicitation
    (form and URL modes: the SDK declares both) and answers with ``opener``."""
    http = create_mcp_http_client(
        headers={"Authorization": f"Bearer {AGENTS[principal]}"},
        timeout=httpx2.Timeout(30, read=120),
    )
    async with http:
        transport = streamable_http_client(f"{base}/mcp", http_client=http)
        async with Client(
            transport,
            mode=mode,
            read_timeout_seconds=120,
            elicitation_callback=opener,
        ) as client:
            yield client
