"""Token exchange (RFC 8693), real parts only: oidc-provider (npm) issues the callers' JWTs and
exchanges them through the grant it registers with ``registerGrantType``; the protected upstream
(MCP SDK resource server) validates the exchanged token against the provider's JWKS. Over the
gateway's HTTP face, in both eras (client and upstream): each JWT caller reaches the upstream as
themselves with a token whose audience is the upstream, and sees only their own notes; a caller
with a static token is refused; an exchange refused by the provider, the provider down and the
upstream refusing the exchanged token each give a clear result naming the server and a
``credential.failed`` event; neither the callers' tokens nor the exchanged ones appear in any
log line, event or audit entry."""

from __future__ import annotations

import contextlib
import copy
import os
import pickle
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from credentials_support import (
    AGENTS,
    APPROVER,
    APPROVER_TOKEN,
    KEY_VAR,
    audit_bytes,
    credentials_config,
    every_log_line,
    vault_keys,
)
from mcp import Client
from oauth import NOTES, Provider, Upstream, oidc_provider, protected_upstream
from paths import REPO
from support import MODES, mcp_http_client, serve_asgi

from gateway.events.model import Event
from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets.context import Bearer, Principal

GATEWAY = "https://lockgate.test/mcp"
"""The resource (audience) of the callers' tokens: the gateway itself."""
SECRET_VAR = "LOCKGATE_TEST_EXCHANGE_SECRET"
REFUSED = "carol"
"""The provider refuses to exchange this user's tokens."""


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    async with oidc_provider(tmp_path_factory, exchange_refused=[REFUSED]) as running:
        yield running


@pytest.fixture(scope="module", params=["legacy", "modern"])
async def upstream(provider: Provider, request: pytest.FixtureRequest) -> AsyncIterator[Upstream]:
    async with protected_upstream(provider.issuer, era=request.param) as running:
        yield running


@contextlib.contextmanager
def exchange_secret(value: str) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SECRET_VAR, value)
        yield


def exchanging(provider: Provider, url: str, **exchange: Any) -> dict[str, Any]:
    """The upstream at ``url`` as ``notes`` in token_exchange mode, at ``provider``."""
    client = {"id": provider.client_id, "secret": f"env:{SECRET_VAR}"}
    settings = {"issuer": provider.issuer, "client": client, **exchange}
    credentials = {"mode": "token_exchange", "exchange": settings}
    return {"name": "notes", "transport": "http", "url": url, "credentials": credentials}


def jwt_issuer(provider: Provider) -> dict[str, Any]:
    """``auth.jwt``'s entry trusting ``provider``'s JWTs for the gateway as agents (principal
    ``idp:<user>``)."""
    return {
        "issuer": provider.issuer,
        "audience": GATEWAY,
        "jwks_url": provider.jwks_url,
        "as": ["agent"],
        "id_prefix": "idp:",
    }


def exchange_config(directory: Path, provider: Provider, server: dict[str, Any]) -> Path:
    """The credentials suite's gateway (static agents, audit, vault) trusting ``provider``'s
    JWTs for agents (principal ``idp:<user>``)."""
    auth = {
        "agents": [{"id": id, "token": token} for id, token in AGENTS.items()],
        "approvers": [{"id": APPROVER, "token": APPROVER_TOKEN}],
        "jwt": [jwt_issuer(provider)],
    }
    return credentials_config(directory, [server], auth=auth)


@contextlib.asynccontextmanager
async def gateway_on(config: Path) -> AsyncIterator[tuple[str, list[Event]]]:
    """The gateway served over HTTP; its base URL and (after the block) every event."""
    gateway = Gateway.from_config(config)
    bus = gateway.parts.events.bus
    published: list[Event] = []
    async with (
        bus.subscribe(["*"], buffer=10_000) as events,
        serve_asgi(build_app(gateway)) as base,
    ):
        yield base, published
        published.extend(events.ready(10_000))


async def _whoami(client: Client) -> dict[str, Any]:
    result = await client.call_tool("notes__whoami", {})
    assert not result.is_error, result
    assert result.structured_content is not None
    return dict(result.structured_content)


async def _notes(client: Client) -> list[str]:
    result = await client.call_tool("notes__my_notes", {})
    assert not result.is_error, result
    assert result.structured_content is not None
    return list(result.structured_content["result"])


def _refusal(result: Any) -> dict[str, Any]:
    assert result.is_error
    found: dict[str, Any] = result.meta["lockgate/refusal"]
    return found


def _failure(result: Any) -> tuple[str, dict[str, Any]]:
    assert result.is_error
    return result.content[0].text, result.meta["lockgate/error"]


def _leaks(secrets: Sequence[str], logs: list[str], events: list[Event], config: Path) -> list[str]:
    """The ``secrets`` found in any log line, event or the audit log."""
    written = [str(e.to_cloudevent()) for e in events]
    audit = audit_bytes(config)
    found = [s for s in secrets if any(s in line for line in logs)]
    found += [s for s in secrets if any(s in event for event in written)]
    return found + [s for s in secrets if s.encode() in audit]


async def _as_each_user(base: str, mode: str, provider: Provider, upstream: Upstream) -> list[str]:
    """Alice and Bob each reach the upstream as themselves; a static agent is refused. The
    callers' tokens."""
    tokens = [await provider.user_token(user, GATEWAY) for user in ("alice", "bob")]
    for user, token in zip(("alice", "bob"), tokens, strict=True):
        async with mcp_http_client(f"{base}/mcp", mode, token) as client:
            me = await _whoami(client)
            assert (me["sub"], me["aud"]) == (user, upstream.url)
            assert me["act"] == {"sub": provider.client_id}  # the gateway acts for the user
            assert await _notes(client) == NOTES[user]
            assert (await _whoami(client))["sub"] == user
    async with mcp_http_client(f"{base}/mcp", mode, AGENTS["agent:alice"]) as static:
        refused = _refusal(await static.call_tool("notes__whoami", {}))
    assert refused["kind"] == "not_connected"
    assert "token exchange" in refused["message"]
    assert "'notes'" in refused["message"]
    return tokens


@pytest.mark.parametrize("mode", MODES)
async def test_each_jwt_caller_reaches_the_upstream_as_themselves_and_no_token_leaks(
    tmp_path: Path, provider: Provider, upstream: Upstream, mode: str
) -> None:
    config = exchange_config(tmp_path, provider, exchanging(provider, upstream.url))
    seen = len(upstream.seen.claims)
    with vault_keys(), exchange_secret(provider.client_secret), every_log_line() as logs:
        async with gateway_on(config) as (base, events):
            callers = await _as_each_user(base, mode, provider, upstream)
    claims = upstream.seen.claims[seen:]
    assert {c["sub"] for c in claims} == {"alice", "bob"}
    assert {c["aud"] for c in claims} == {upstream.url}
    for user in ("alice", "bob"):  # exchanged once each: the token is kept until near expiry
        assert len({c["jti"] for c in claims if c["sub"] == user}) == 1
    exchanged = upstream.seen.tokens[seen:]
    assert not set(exchanged) & set(callers)  # never forwarded as is
    assert _leaks([*callers, *set(exchanged)], logs.lines, events, config) == []
    assert b"idp:alice" in audit_bytes(config)  # the audit log was read, not empty


async def test_a_token_near_expiry_is_exchanged_anew_on_the_same_connection(
    tmp_path: Path, provider: Provider, upstream: Upstream
) -> None:
    server = exchanging(provider, upstream.url, renew_before=3600, scopes=["notes:read"])
    config = exchange_config(tmp_path, provider, server)
    seen = len(upstream.seen.claims)
    with vault_keys(), exchange_secret(provider.client_secret):
        async with gateway_on(config) as (base, _events):
            token = await provider.user_token("alice", GATEWAY)
            async with mcp_http_client(f"{base}/mcp", "auto", token) as client:
                first, second = await _whoami(client), await _whoami(client)
    assert first["scopes"] == second["scopes"] == ["notes:read"]
    jtis = [c["jti"] for c in upstream.seen.claims[seen:]]
    assert len(set(jtis)) >= 2  # each call (5 s from expiry: always) exchanged anew


async def test_refusals_and_failures_name_the_server_and_are_put_on_record(
    tmp_path: Path, provider: Provider, upstream: Upstream
) -> None:
    config = exchange_config(tmp_path, provider, exchanging(provider, upstream.url))
    with vault_keys(), exchange_secret(provider.client_secret), every_log_line() as logs:
        async with gateway_on(config) as (base, events):
            tokens = await _failures(base, provider, upstream)
    failed = [e.data for e in events if e.type == "credential.failed"]
    assert {(f["server"], f["principal"]) for f in failed} == {
        ("notes", f"idp:{REFUSED}"),
        ("notes", "idp:bob"),
    }
    assert "invalid_grant" in failed[0]["reason"]
    assert {f["reason"] for f in failed if f["principal"] == "idp:bob"} == {"401"}
    assert _leaks(tokens, logs.lines, events, config) == []
    assert b"credential.failed" in audit_bytes(config)


async def _failures(base: str, provider: Provider, upstream: Upstream) -> list[str]:
    """Alice connects; Carol's exchange is refused; the upstream refuses Bob's exchanged token
    once, then takes it. The callers' tokens."""
    users = ("alice", REFUSED, "bob")
    tokens = [await provider.user_token(user, GATEWAY) for user in users]
    async with mcp_http_client(f"{base}/mcp", "auto", tokens[0]) as alice:
        assert (await _whoami(alice))["sub"] == "alice"
    async with mcp_http_client(f"{base}/mcp", "auto", tokens[1]) as carol:
        refused = _refusal(await carol.call_tool("notes__whoami", {}))
    assert refused["kind"] == "not_connected"
    assert "refused to exchange your token for 'notes' (invalid_grant" in refused["message"]
    upstream.seen.refused.add("bob")
    try:
        async with mcp_http_client(f"{base}/mcp", "auto", tokens[2]) as bob:
            text, error = _failure(await bob.call_tool("notes__whoami", {}))
    finally:
        upstream.seen.refused.discard("bob")
    assert error["kind"] == "upstream_unavailable"
    assert "'notes' refused the token the identity provider exchanged for you" in text
    async with mcp_http_client(f"{base}/mcp", "auto", tokens[2]) as bob:
        assert (await _whoami(bob))["sub"] == "bob"  # exchanged anew, connected anew
    return tokens


async def test_the_provider_down_fails_the_call_naming_the_server(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        provider = await stack.enter_async_context(oidc_provider(tmp_path_factory))
        upstream = await stack.enter_async_context(protected_upstream(provider.issuer))
        server = exchanging(provider, upstream.url, renew_before=3600)  # exchange every call
        config = exchange_config(tmp_path, provider, server)
        stack.enter_context(vault_keys())
        stack.enter_context(exchange_secret(provider.client_secret))
        base, events = await stack.enter_async_context(gateway_on(config))
        token = await provider.user_token("alice", GATEWAY)
        client = await stack.enter_async_context(mcp_http_client(f"{base}/mcp", "auto", token))
        assert (await _whoami(client))["sub"] == "alice"
        await provider.stop()
        text, error = _failure(await client.call_tool("notes__whoami", {}))
    assert error["kind"] == "upstream_unavailable"
    assert "the identity provider could not exchange your token for 'notes' now" in text
    assert "try again later" in text
    failed = [e.data for e in events if e.type == "credential.failed"]
    assert [f["principal"] for f in failed] == ["idp:alice"]
    assert token not in str(failed)


async def test_the_docs_recipe_runs_as_written(
    tmp_path: Path, provider: Provider, upstream: Upstream
) -> None:
    text = (REPO / "docs" / "credentials.md").read_text(encoding="utf-8")
    [recipe] = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "token_exchange" in b]
    recipe = recipe.replace("https://notes.example.com/mcp", upstream.url)
    recipe = recipe.replace("https://lockgate.example.com/mcp", GATEWAY)
    recipe = recipe.replace("https://idp.example.com", provider.issuer)
    config = tmp_path / "credentials.yaml"
    config.write_text(recipe, encoding="utf-8")
    with vault_keys(), pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOCKGATE_VAULT_KEY", os.environ[KEY_VAR])
        patch.setenv("LOCKGATE_EXCHANGE_SECRET", provider.client_secret)
        async with gateway_on(config) as (base, _events):
            token = await provider.user_token("bob", GATEWAY)
            async with mcp_http_client(f"{base}/mcp", "auto", token) as client:
                me = await _whoami(client)
    assert (me["sub"], me["aud"], me["scopes"]) == ("bob", upstream.url, ["notes:read"])


async def test_an_upstream_wanting_a_larger_scope_is_put_on_record(
    tmp_path: Path, provider: Provider
) -> None:
    async with protected_upstream(provider.issuer, required_scopes=["notes:write"]) as upstream:
        server = exchanging(provider, upstream.url, scopes=["notes:read"])
        config = exchange_config(tmp_path, provider, server)
        with vault_keys(), exchange_secret(provider.client_secret):
            async with gateway_on(config) as (base, events):
                token = await provider.user_token("alice", GATEWAY)
                async with mcp_http_client(f"{base}/mcp", "auto", token) as client:
                    listed = await client.list_tools()
    assert listed.tools == []  # nobody could connect: no catalogue to serve yet
    failed = [e.data for e in events if e.type == "credential.failed"]
    assert failed
    assert {f["principal"] for f in failed} == {"idp:alice"}
    assert failed[0]["reason"].startswith("403 insufficient_scope: it needs")


def test_a_callers_bearer_never_prints_compares_or_pickles() -> None:
    held = Principal(id="idp:alice", bearer=Bearer("eyJ.secret.token"))
    assert "secret" not in repr(held)
    assert "secret" not in f"{held.bearer}"
    assert copy.deepcopy(held).bearer is held.bearer
    assert held == Principal(id="idp:alice")  # the token is no part of who the caller is
    with pytest.raises(TypeError, match="never serialized"):
        pickle.dumps(held)
    assert held.bearer is not None
    assert held.bearer.reveal() == "eyJ.secret.token"
