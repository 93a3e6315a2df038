"""Support of the ``oauth`` credentials suite: a gateway whose ``notes`` server (the protected
upstream of ``oauth.upstream``) is reached with each agent's own account at ``oidc-provider``,
connected through the gateway's REST API and the provider's login and consent pages.

Imported by module name (``import oauth_gateway``): pytest puts this directory on ``sys.path``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from credentials_support import AGENTS, APPROVER, APPROVER_TOKEN, KEY_VAR, audit_bytes, rest
from mcp import Client
from oauth import USERS, browser_login
from support import mcp_http_client, serve_asgi, write_config

from gateway.credentials.oauth import OAuthProvider
from gateway.gateway import Gateway
from gateway.http.app import build_app

ALICE, BOB = "agent:alice", "agent:bob"
USER_OF = {ALICE: "alice", BOB: "bob"}
"""Which provider account each agent connects."""
SERVER = "notes"


def oauth_server(url: str, **credentials: Any) -> dict[str, Any]:
    """The protected upstream at ``url`` in ``oauth`` mode (dynamic registration unless
    ``client`` is given)."""
    return {
        "name": SERVER,
        "transport": "http",
        "url": url,
        "credentials": {"mode": "oauth", **credentials},
    }


def oauth_config(
    directory: Path, servers: Sequence[dict[str, Any]], *, port: int, **extra: Any
) -> Path:
    """A gateway config reached at ``http://127.0.0.1:{port}`` (its ``/oauth/callback``): two
    agents, an approver, the vault, an audit log, every call allowed."""
    agents = [{"id": id, "token": token} for id, token in AGENTS.items()]
    sections: dict[str, Any] = {
        "auth": {
            "agents": agents,
            "approvers": [{"id": APPROVER, "token": APPROVER_TOKEN}],
            "public_url": f"http://127.0.0.1:{port}",
        },
        "policies": {"default_effect": "allow"},
        "approvals": {"store": "sqlite", "path": "pending.db"},
        "events": {"audit": {"enabled": True, "path": "audit.db"}},
        "vault": {"key": f"env:{KEY_VAR}"},
        **extra,
    }
    return write_config(directory, servers, **sections)


async def start_connect(base: str, principal: str) -> str:
    """The authorization URL ``principal`` is given by ``POST .../connect``."""
    async with rest(base, principal) as api:
        answer = await api.post(f"/api/connections/{SERVER}/connect")
    assert answer.status_code == 200, answer.text
    url: str = answer.json()["url"]
    return url


async def connect(base: str, principal: str) -> str:
    """``principal`` connects their account (login and consent in Chromium); the text of the
    gateway's callback page."""
    url = await start_connect(base, principal)
    user = USER_OF[principal]
    landed = await browser_login(url, user, USERS[user])
    assert landed.startswith(f"{base}/oauth/callback?"), landed
    async with rest(base, principal) as api:
        mine = (await api.get("/api/connections")).json()["items"]
    assert [c["server"] for c in mine] == [SERVER], mine
    return landed


def scope_of(url: str) -> list[str]:
    """The scopes an authorization URL asks for."""
    return parse_qs(urlparse(url).query).get("scope", [""])[0].split()


def provider_of(gateway: Gateway) -> OAuthProvider:
    credentials = gateway.parts.credentials
    assert credentials is not None
    found = credentials.providers[SERVER]
    assert isinstance(found, OAuthProvider)
    return found


async def tokens_of(gateway: Gateway, principal: str) -> list[str]:
    """``principal``'s access and refresh tokens as the vault holds them now."""
    held = await provider_of(gateway).grants.held(principal)
    assert held is not None
    token = held.grant.token
    return [t for t in (token.access_token, token.refresh_token) if t]


@contextlib.asynccontextmanager
async def agents(base: str, mode: str) -> AsyncIterator[tuple[Client, Client]]:
    """Alice's and Bob's MCP clients on the gateway's ``/mcp``."""
    async with (
        mcp_http_client(f"{base}/mcp", mode, AGENTS[ALICE]) as alice,
        mcp_http_client(f"{base}/mcp", mode, AGENTS[BOB]) as bob,
    ):
        yield alice, bob


@contextlib.asynccontextmanager
async def served(config: Path, port: int) -> AsyncIterator[tuple[Gateway, str]]:
    """The gateway of ``config`` on ``port``; (the gateway, its base URL)."""
    gateway = Gateway.from_config(config)
    async with serve_asgi(build_app(gateway), port) as base:
        yield gateway, base


def leaks(tokens: Iterable[str], config: Path, *texts: Iterable[str]) -> list[str]:
    """Where any of ``tokens`` appears: in ``texts`` (log lines, events, pages) or the audit
    log's bytes."""
    audit = audit_bytes(config)
    found = []
    for token in tokens:
        if token.encode() in audit:
            found.append("audit log")
        found += [text[:80] for group in texts for text in group if token in text]
    return found
