"""``oauth`` connects across replicas (issue 27; real parts only): two gateways on one
PostgreSQL schema behind a load balancer (their shared ``auth.public_url``), oidc-provider
with access tokens that live 10 s, the protected upstream, Chromium through the login and
consent pages.

A connect started on one replica is finished by the other's ``/oauth/callback`` (with the
client the first registered) and the caller reaches the upstream as themselves through either;
both replicas calling at once with an expired token refresh it once (the rotated refresh token
is never spent twice); a state is taken once, by one replica, however many send it. The store
of started flows itself: sealed, single use and expiring, in memory, SQLite and PostgreSQL."""

from __future__ import annotations

import contextlib
import hashlib
import html
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import asyncpg
import httpx2
import pytest
from credentials_support import AGENTS, vault_keys
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata
from oauth import USERS, Provider, Upstream, browser_login, oidc_provider
from oauth_gateway import ALICE, SERVER, oauth_config, oauth_server, provider_of, start_connect
from pg_support import PG_DSN, fresh_schema, pg_settings, pg_storage
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from support import MODES, free_port, mcp_http_client, serve_asgi

from gateway.credentials import ConnectError
from gateway.credentials.flow_store import FlowStore
from gateway.credentials.locks import lock_name
from gateway.credentials.oauth_discovery import Discovered
from gateway.credentials.oauth_flows import ConnectFlows, Flow
from gateway.gateway import Gateway
from gateway.http.app import build_app
from gateway.memory.oauth_flows import MemoryFlowStore
from gateway.postgres.database import Database
from gateway.postgres.oauth_flows import PostgresFlowStore
from gateway.sqlite.oauth_flows import SQLiteFlowStore
from gateway.vault import Keyring

SHORT_TTL = 10
"""Seconds an access token lives: under the 30 s margin, so every call refreshes first (as in
test_oauth_lifecycle)."""
KEY_VAR = "LOCKGATE_TEST_OAUTH_REPLICA_STATE_KEY"
UNKNOWN = re.compile(r"connect link is unknown, (already )?used or expired")
"""The callback's page for a state not (or no longer) in the store, or taken by another."""


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    async with oidc_provider(tmp_path_factory, access_token_ttl=SHORT_TTL) as running:
        yield running


@dataclass
class Balancer:
    """The replicas' shared public URL: a callback goes on to ``to`` (a replica's base URL), or
    is held (kept, not forwarded) when ``to`` is None; every (query, status, text) is kept."""

    to: str | None = None
    answers: list[tuple[str, int, str]] = field(default_factory=list)

    async def forward(self, request: Request) -> Response:
        query = request.url.query
        if self.to is None:
            self.answers.append((query, 200, "held"))
            return Response("held")
        async with httpx2.AsyncClient(timeout=60) as http:
            answer = await http.get(f"{self.to}{request.url.path}?{query}")
        self.answers.append((query, answer.status_code, answer.text))
        return Response(answer.content, answer.status_code, media_type="text/html")


@dataclass(frozen=True)
class Replicas:
    one: Gateway
    two: Gateway
    bases: tuple[str, str]
    balancer: Balancer
    schema: str


@contextlib.asynccontextmanager
async def replicas(tmp_path: Path, upstream: Upstream) -> AsyncIterator[Replicas]:
    """Two gateways on a fresh schema, both answering at the balancer's URL."""
    balancer, front = Balancer(), free_port()
    app = Starlette(routes=[Route("/oauth/callback", balancer.forward)])  # no favicon
    approvals = {"store": "sqlite", "path": "pending.db", "request_state_key": f"env:{KEY_VAR}"}
    async with fresh_schema() as schema, serve_asgi(app, front):
        configs = []
        for name in ("one", "two"):
            (tmp_path / name).mkdir()
            servers = [oauth_server(upstream.url)]
            storage = pg_storage(schema)
            config = oauth_config(
                tmp_path / name, servers, port=front, storage=storage, approvals=approvals
            )
            configs.append(config)
        one, two = Gateway.from_config(configs[0]), Gateway.from_config(configs[1])
        async with serve_asgi(build_app(one)) as base_one, serve_asgi(build_app(two)) as base_two:
            yield Replicas(one, two, (base_one, base_two), balancer, schema)


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(KEY_VAR, "22" * 32)
    with vault_keys():  # one vault key for both replicas
        yield


async def _sub(base: str, mode: str) -> str:
    async with mcp_http_client(f"{base}/mcp", mode, AGENTS[ALICE]) as alice:
        result = await alice.call_tool(f"{SERVER}__whoami", {})
    assert not result.is_error, result
    return str(result.structured_content["sub"])


async def _stored_flows(schema: str) -> list[tuple[Any, ...]]:
    conn = await asyncpg.connect(PG_DSN)
    try:
        rows = await conn.fetch(f'SELECT * FROM "{schema}".oauth_flows')
    finally:
        await conn.close()
    return [tuple(row) for row in rows]


async def _login(url: str) -> str:
    """Alice signs in and consents in Chromium; the URL the provider sent her back to."""
    return await browser_login(url, "alice", USERS["alice"])


@pytest.mark.parametrize("mode", MODES)
async def test_a_connect_started_on_one_replica_is_finished_by_the_others_callback(
    tmp_path: Path, upstream: Upstream, mode: str
) -> None:
    with anyio.fail_after(240):
        async with replicas(tmp_path, upstream) as r:
            one, two = r.bases
            r.balancer.to = two
            url = await start_connect(one, ALICE)
            [stored] = await _stored_flows(r.schema)
            state = parse_qs(urlparse(url).query)["state"][0]
            landed = await _login(url)
            left = await _stored_flows(r.schema)
            held = await provider_of(r.two).grants.held(ALICE)
            subs = [await _sub(one, mode), await _sub(two, mode), await _sub(one, mode)]
    [(query, status, page)] = r.balancer.answers
    assert landed.endswith(f"/oauth/callback?{query}")
    assert status == 200, page[:300]
    assert "Your account is connected to 'notes'" in html.unescape(page)
    assert subs == ["alice"] * 3
    assert held is not None  # finished with the client the first replica registered
    assert held.grant.client.client_id == parse_qs(urlparse(url).query)["client_id"][0]
    assert stored[0] == hashlib.sha256(state.encode()).hexdigest()
    assert not any(state in str(column) for column in stored)  # no state, no verifier in clear
    assert left == []  # taken


async def test_two_replicas_calling_at_once_with_an_expired_token_refresh_it_once(
    tmp_path: Path, upstream: Upstream
) -> None:
    with anyio.fail_after(300):
        async with replicas(tmp_path, upstream) as r:
            r.balancer.to = r.bases[1]
            await _login(await start_connect(r.bases[0], ALICE))
            assert [await _sub(base, "auto") for base in r.bases] == ["alice"] * 2  # warm
            rounds = [await _both_at_once(r, upstream) for _ in range(2)]
    for refreshed, subs, tokens in rounds:
        assert refreshed == 1  # one refresh for the two calls: the refresh token spent once
        assert subs == ["alice", "alice"]
        assert len(tokens) == 1  # both replicas sent the one new access token
    assert rounds[0][2] != rounds[1][2]


async def _both_at_once(r: Replicas, upstream: Upstream) -> tuple[int, list[str], set[str]]:
    """Both replicas call while the grant's refresh lock is held, so both find the token
    expired before either refreshes; the lock is let go once both wait on it: (refreshes
    recorded on the shared audit log, the callers' subjects, the access tokens the upstream
    saw)."""
    before, seen = await _refreshes(r.schema), len(upstream.seen.tokens)
    subs: list[str] = []

    async def call(base: str) -> None:
        subs.append(await _sub(base, "auto"))

    conn = await asyncpg.connect(PG_DSN)
    try:
        name = lock_name(f"{SERVER}\0{ALICE}")
        async with anyio.create_task_group() as group, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", name)
            for base in r.bases:
                group.start_soon(call, base)
            await _until(lambda: _waiting(conn, name), 2)
    finally:
        await conn.close()
    tokens = set(upstream.seen.tokens[seen:])
    return await _refreshes(r.schema) - before, subs, tokens


async def _waiting(conn: asyncpg.Connection, name: str) -> int:
    """How many wait for the advisory lock of ``name``."""
    found = await conn.fetchval(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        " AND ((classid::bigint << 32) | objid::bigint) = hashtext($1)::bigint",
        name,
    )
    return int(found)


async def _until(count: Callable[[], Any], wanted: int) -> None:
    """Poll ``count()`` (a real condition: PostgreSQL's lock table) until it is ``wanted``."""
    while await count() != wanted:
        await anyio.sleep(0.05)


async def _refreshes(schema: str) -> int:
    conn = await asyncpg.connect(PG_DSN)
    try:
        found = await conn.fetchval(
            f"SELECT count(*) FROM \"{schema}\".audit WHERE kind = 'credential.refreshed'"
        )
    finally:
        await conn.close()
    return int(found)


async def test_a_state_is_taken_once_by_one_replica_and_refused_on_replay(
    tmp_path: Path, upstream: Upstream
) -> None:
    with anyio.fail_after(240):
        async with replicas(tmp_path, upstream) as r:
            await _login(await start_connect(r.bases[0], ALICE))  # held at the balancer
            [(query, _, _)] = r.balancer.answers
            answers: dict[str, httpx2.Response] = {}

            async def send(base: str) -> None:
                async with httpx2.AsyncClient(timeout=60) as http:
                    answers[base] = await http.get(f"{base}/oauth/callback?{query}")

            async with anyio.create_task_group() as group:
                for base in r.bases:
                    group.start_soon(send, base)
            first = sorted((a.status_code, a.text) for a in answers.values())
            for base in r.bases:
                await send(base)
            replayed = [(a.status_code, a.text) for a in answers.values()]
            sub = await _sub(r.bases[1], "auto")
    assert [status for status, _ in first] == [200, 400]
    assert "Your account is connected to 'notes'" in html.unescape(first[0][1])
    assert UNKNOWN.search(first[1][1])
    assert [status for status, _ in replayed] == [400, 400]
    assert all(UNKNOWN.search(text) for _, text in replayed)
    assert sub == "alice"


# The store of started flows, on each backend.

FLOW = Flow(
    principal=ALICE,
    found=Discovered(
        resource="http://127.0.0.1:1/mcp",
        protected=None,
        server=OAuthMetadata.model_validate(
            {
                "issuer": "http://127.0.0.1:2",
                "authorization_endpoint": "http://127.0.0.1:2/auth",
                "token_endpoint": "http://127.0.0.1:2/token",
            }
        ),
        challenged_scope=None,
    ),
    client=OAuthClientInformationFull(
        client_id="lockgate-1", client_secret="client-secret-9f", redirect_uris=None
    ),
    verifier="verifier-" + "v" * 40,
    scope="notes:read",
    call_ref=None,
    return_to="/console",
)


@contextlib.asynccontextmanager
async def flow_store(
    kind: str, tmp_path: Path
) -> AsyncIterator[tuple[FlowStore, Callable[[], Any]]]:
    """A store of ``kind``, and what reads every byte it holds."""
    if kind == "memory":
        memory = MemoryFlowStore()

        async def memory_text() -> str:
            return repr(memory.__dict__)

        yield memory, memory_text
    elif kind == "sqlite":
        path = tmp_path / "pending.db"

        def read() -> bytes:
            return b"".join(p.read_bytes() for p in tmp_path.glob("pending.db*"))

        async def sqlite_bytes() -> bytes:
            return await anyio.to_thread.run_sync(read)

        yield SQLiteFlowStore(path), sqlite_bytes
    else:
        async with fresh_schema() as schema:
            database = Database(pg_settings(schema))
            try:
                yield PostgresFlowStore(database), lambda: _stored_flows(schema)
            finally:
                await database.close()


KINDS = [pytest.param(kind, id=kind) for kind in ("memory", "sqlite", "postgres")]


def _flows(store: FlowStore, ttl: float = 600) -> ConnectFlows:
    return ConnectFlows(SERVER, store, Keyring.of(b"k" * 32), ttl=ttl)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_kept_flow_is_sealed_and_taken_once(kind: str, tmp_path: Path) -> None:
    async with flow_store(kind, tmp_path) as (store, held):
        flows = _flows(store)
        await flows.keep("state-1", FLOW)
        kept = str(await held())
        owned = [await flows.owns("state-1"), await _flows(store).owns("state-2")]
        taken = await flows.take("state-1")
        with pytest.raises(ConnectError, match="unknown, used or expired"):
            await _flows(store).take("state-1")  # another replica's, say
        after = await flows.owns("state-1")
    assert taken == FLOW
    assert owned == [True, False]
    assert not after
    for secret in ("state-1", FLOW.verifier, "client-secret-9f"):
        assert secret not in kept


@pytest.mark.parametrize("kind", KINDS)
async def test_an_expired_flow_is_refused_as_expired(kind: str, tmp_path: Path) -> None:
    async with flow_store(kind, tmp_path) as (store, _):
        await _flows(store, ttl=0).keep("state-1", FLOW)
        with pytest.raises(ConnectError, match=r"this connect link expired \d+ s ago"):
            await _flows(store).take("state-1")


async def test_a_flow_sealed_with_another_vault_key_is_refused_naming_the_key(
    tmp_path: Path,
) -> None:
    async with flow_store("sqlite", tmp_path) as (store, _):
        await _flows(store).keep("state-1", FLOW)
        other = ConnectFlows(SERVER, store, Keyring.of(b"o" * 32), ttl=600)
        with pytest.raises(ConnectError, match=r"give every replica the same vault\.key"):
            await other.take("state-1")
