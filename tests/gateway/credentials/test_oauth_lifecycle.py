"""An ``oauth`` connection's life (real parts only; HTTP face, 2026-07-28 client: the eras are
covered by test_oauth_connect): a pre-registered client whose access tokens live 10 s, so every
call refreshes (rotating the refresh token, keeping the upstream connection); a revoke revokes
at the provider too and the next call needs a connect; a grant revoked upstream, a 401 and a
403 ``insufficient_scope`` each tell the caller to connect again (the last asking the larger
scope), once, without retrying; the provider down fails the call and keeps the connection."""

from __future__ import annotations

import base64
import contextlib
import json
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx2
import pytest
from credentials_support import AGENTS, every_log_line, rest, vault_keys
from oauth import CLIENT_ID, CLIENT_SECRET, Provider, Upstream, oidc_provider, protected_upstream
from oauth.upstream import Seen, build
from oauth_gateway import (
    ALICE,
    SERVER,
    connect,
    leaks,
    oauth_config,
    oauth_server,
    provider_of,
    scope_of,
    served,
    start_connect,
    tokens_of,
)
from support import free_port, mcp_http_client, serve_asgi

from gateway.wiring.checks import load_config

PORTS = [free_port() for _ in range(6)]
"""A gateway port per test (the pre-registered client knows each one's callback)."""
CALLBACKS = [f"http://127.0.0.1:{port}/oauth/callback" for port in PORTS]
SECRET_VAR = "LOCKGATE_TEST_OAUTH_CLIENT_SECRET"
PRE_REGISTERED = {
    "client": {"id": CLIENT_ID, "secret": f"env:{SECRET_VAR}"},
    "scopes": ["notes:read", "notes:write"],  # what the client may ask (not the server's all)
}
SHORT_TTL = 10
"""Seconds an access token lives: under the 30 s margin, so every call refreshes first."""


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    async with oidc_provider(
        tmp_path_factory, redirect_uris=CALLBACKS, access_token_ttl=SHORT_TTL
    ) as running:
        yield running


@pytest.fixture(autouse=True)
def client_secret(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(SECRET_VAR, CLIENT_SECRET)
    with vault_keys():
        yield


async def _whoami(base: str) -> Any:
    async with mcp_http_client(f"{base}/mcp", "auto", AGENTS[ALICE]) as alice:
        return await alice.call_tool(f"{SERVER}__whoami", {})


def _sub(result: Any) -> str:
    assert not result.is_error, result
    return str(result.structured_content["sub"])


def _refusal(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    refusal: dict[str, Any] = result.meta["lockgate/refusal"]
    return refusal


async def test_a_short_lived_token_is_refreshed_rotating_its_refresh_token_on_one_connection(
    tmp_path: Path, upstream: Upstream
) -> None:
    config = oauth_config(tmp_path, [oauth_server(upstream.url, **PRE_REGISTERED)], port=PORTS[0])
    with every_log_line() as logs:
        async with (
            served(config, PORTS[0]) as (gateway, base),
            gateway.parts.events.bus.subscribe(["credential.*"]) as events,
        ):
            page = await connect(base, ALICE)
            first = await tokens_of(gateway, ALICE)
            before = len(upstream.seen.tokens)
            async with mcp_http_client(f"{base}/mcp", "auto", AGENTS[ALICE]) as alice:
                subs = [_sub(await alice.call_tool("notes__whoami", {})) for _ in range(2)]
                pool = next(iter(_pools(gateway)))
                connection = pool.entries[ALICE].toolset
                subs.append(_sub(await alice.call_tool("notes__whoami", {})))
                assert pool.entries[ALICE].toolset is connection  # not torn down
            last = await tokens_of(gateway, ALICE)
            published = events.ready(1_000)
    assert subs == ["alice"] * 3
    refreshed = [e.data for e in published if e.type == "credential.refreshed"]
    assert len(refreshed) >= 3
    assert {d["principal"] for d in refreshed} == {ALICE}
    assert first[1] != last[1]  # the refresh token rotated
    used = upstream.seen.tokens[before:]
    assert len(set(used)) >= 3  # a new access token each time
    assert {c["client_id"] for c in upstream.seen.claims[before:]} == {CLIENT_ID}
    written = [json.dumps(e.to_cloudevent(), default=str) for e in published]
    assert not leaks({*first, *last, *used}, config, logs.lines, written, [page])


def _pools(gateway: Any) -> Iterator[Any]:
    from toolsets.upstream.per_principal import PerPrincipalToolset

    seen: list[Any] = [gateway.parts.combined]
    while seen:
        toolset = seen.pop()
        if isinstance(toolset, PerPrincipalToolset):
            yield toolset
        seen += [getattr(toolset, "wrapped", None), *getattr(toolset, "toolsets", ())]
        seen = [t for t in seen if t is not None]


async def test_revoke_revokes_at_the_provider_and_the_next_call_needs_a_connect(
    tmp_path: Path, provider: Provider, upstream: Upstream
) -> None:
    config = oauth_config(tmp_path, [oauth_server(upstream.url, **PRE_REGISTERED)], port=PORTS[1])
    async with served(config, PORTS[1]) as (gateway, base):
        await connect(base, ALICE)
        assert _sub(await _whoami(base)) == "alice"
        refresh = (await tokens_of(gateway, ALICE))[1]
        async with rest(base, ALICE) as api:
            gone = (await api.delete(f"/api/connections/{SERVER}")).json()
        assert (gone["revoked"], gone["revoked_upstream"]) == (True, True)
        with pytest.raises(httpx2.HTTPStatusError):  # spent at the provider too
            await provider.token(grant_type="refresh_token", refresh_token=refresh)
        refused = _refusal(await _whoami(base))
    assert refused["kind"] == "not_connected"
    assert refused["unblock"]["action"] == "connect"


async def test_a_grant_revoked_upstream_tells_the_caller_to_connect_again_once(
    tmp_path: Path, provider: Provider, upstream: Upstream
) -> None:
    config = oauth_config(tmp_path, [oauth_server(upstream.url, **PRE_REGISTERED)], port=PORTS[2])
    async with (
        served(config, PORTS[2]) as (gateway, base),
        gateway.parts.events.bus.subscribe(["credential.*"]) as events,
    ):
        await connect(base, ALICE)
        await provider.revoke((await tokens_of(gateway, ALICE))[1])  # the user, at the AS
        first, second = _refusal(await _whoami(base)), _refusal(await _whoami(base))
        published = events.ready(1_000)
    assert first["kind"] == second["kind"] == "not_connected"
    assert "lockgate connections connect notes" in first["message"]
    assert "invalid_grant" in first["message"]
    failed = [e.data for e in published if e.type == "credential.failed"]
    assert [(d["principal"], d["status"]) for d in failed] == [(ALICE, "reconnect")]  # once


async def test_an_upstream_401_with_a_fresh_token_tells_the_caller_to_connect_again(
    tmp_path: Path, upstream: Upstream
) -> None:
    config = oauth_config(tmp_path, [oauth_server(upstream.url, **PRE_REGISTERED)], port=PORTS[3])
    async with served(config, PORTS[3]) as (gateway, base):
        await connect(base, ALICE)
        upstream.seen.refused.add("alice")
        try:
            refused = _refusal(await _whoami(base))
        finally:
            upstream.seen.refused.discard("alice")
        held = await provider_of(gateway).grants.held(ALICE)
    assert refused["kind"] == "not_connected"
    assert "(401)" in refused["message"]
    assert "lockgate connections connect notes" in refused["message"]
    assert held is not None
    assert held.grant.status == "reconnect"


@contextlib.asynccontextmanager
async def _notes(issuer: str, port: int, scopes: Sequence[str] = ()) -> AsyncIterator[None]:
    """The protected upstream on ``port`` (a restart of it may require ``scopes``); it stops
    as a killed server does, the gateway's connection to it dropped."""
    url = f"http://127.0.0.1:{port}/mcp"
    app = build(issuer, url, Seen(), required_scopes=scopes).streamable_http_app(host="127.0.0.1")
    async with serve_asgi(app, port, crash=True):
        yield


async def test_insufficient_scope_asks_to_connect_again_with_the_larger_scope(
    tmp_path: Path, provider: Provider
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    server = oauth_server(url, **{**PRE_REGISTERED, "scopes": ["notes:read"]})
    config = oauth_config(tmp_path, [server], port=PORTS[4])
    async with served(config, PORTS[4]) as (_, base):
        async with _notes(provider.issuer, port):
            await connect(base, ALICE)
            assert _sub(await _whoami(base)) == "alice"
        async with _notes(provider.issuer, port, scopes=["notes:write"]):  # now it needs more
            refused = _refusal(await _whoami(base))
            again = await start_connect(base, ALICE)
    assert refused["kind"] == "not_connected"
    assert "insufficient_scope" in refused["message"]
    assert {"notes:read", "notes:write"} <= set(scope_of(again))  # the next connect asks more


async def test_the_authorization_server_down_fails_the_call_and_keeps_the_connection(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    async with (
        oidc_provider(
            tmp_path_factory, redirect_uris=CALLBACKS, access_token_ttl=SHORT_TTL
        ) as down,
        protected_upstream(down.issuer) as upstream,
    ):
        server = oauth_server(upstream.url, **PRE_REGISTERED)
        config = oauth_config(tmp_path, [server], port=PORTS[5])
        async with served(config, PORTS[5]) as (gateway, base):
            await connect(base, ALICE)
            await down.stop()
            result = await _whoami(base)
            held = await provider_of(gateway).grants.held(ALICE)
    assert result.is_error
    assert result.meta["lockgate/error"]["kind"] == "upstream_unavailable"
    assert "authorization server of 'notes' could not refresh" in result.content[0].text
    assert held is not None
    assert held.grant.status == "ok"


def test_the_docs_oauth_recipe_config_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (Path(__file__).resolve().parents[3] / "docs" / "credentials.md").read_text()
    [recipe] = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "mode: oauth" in b]
    monkeypatch.setenv("LOCKGATE_VAULT_KEY", base64.b64encode(bytes(32)).decode())
    monkeypatch.setenv("ALICE_TOKEN", "alice-agent-token")
    config = tmp_path / "credentials.yaml"
    config.write_text(recipe)
    [server] = load_config(config).servers
    assert server.credentials.mode == "oauth"
    assert server.credentials.scopes == ["notes:read", "notes:write"]
