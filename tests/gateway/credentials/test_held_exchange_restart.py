"""A ``token_exchange`` call held for approval when the gateway restarts before the decision
(real parts: oidc-provider, the protected upstream, the gateway over HTTP on one SQLite store,
approved over the REST API; both client eras). lockgate keeps no caller token across a restart,
so the approved call of a task the restarted gateway settles on its own ends ``failed``, once,
naming the server and that the caller must call again, and never reaches the upstream as
anyone; once the caller has come back with its JWT (re-issuing the identical call), the
approved call runs as that caller with a fresh exchange, whether the task or the re-issued call
claims it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from credentials_support import (
    APPROVER,
    APPROVER_TOKEN,
    approve,
    credentials_config,
    rest,
    vault_keys,
)
from gateway_faces import Face
from mcp import Client
from oauth import Provider, Upstream, oidc_provider
from support import MODES, echo_upstream, mcp_http_client
from tasks_client import call_as_task, open_tasks_client, request, until_ended

from gateway.events.model import Event
from tests.gateway.credentials.test_token_exchange import (
    GATEWAY,
    exchange_secret,
    exchanging,
    gateway_on,
    jwt_issuer,
)

POLICY = f"""\
version: 1
defaults: {{effect: allow}}
rules:
  - id: held
    tools: [notes__whoami]
    effect: ask
    approval: {{approvers: ["{APPROVER}"], expires: 5m, hold: 1s}}
"""


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    async with oidc_provider(tmp_path_factory) as running:
        yield running


def _config(directory: Path, provider: Provider, upstream: Upstream) -> Path:
    """``notes`` in token_exchange mode, asked about (``notes__whoami``), pending calls and
    tasks in SQLite; an echo server beside it (a shared upstream: the gateway offers tasks)."""
    policy = directory / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    auth = {"approvers": [{"id": APPROVER, "token": APPROVER_TOKEN}], "jwt": [jwt_issuer(provider)]}
    servers = [exchanging(provider, upstream.url), echo_upstream()]
    return credentials_config(directory, servers, auth=auth, policies={"files": [str(policy)]})


@contextlib.asynccontextmanager
async def _as_alice(
    directory: Path, provider: Provider, upstream: Upstream
) -> AsyncIterator[tuple[Path, str]]:
    """The suite's config and Alice's JWT, with the vault key and the exchange secret set, under
    the suite's time bound."""
    config = _config(directory, provider, upstream)
    token = await provider.user_token("alice", GATEWAY)
    with vault_keys(), exchange_secret(provider.client_secret), anyio.fail_after(180):
        yield config, token


@contextlib.asynccontextmanager
async def _caller(base: str, config: Path, mode: str, token: str) -> AsyncIterator[Client]:
    async with open_tasks_client(
        Face("http", mode), config=config, url=f"{base}/mcp", token=token
    ) as client:
        yield client


async def _held_as_task(config: Path, mode: str, token: str) -> tuple[str, str]:
    """Alice's ``notes__whoami`` answered as a task on a gateway that then stops; (the task
    id, the approval id)."""
    async with gateway_on(config) as (base, _events), _caller(base, config, mode, token) as alice:
        created = await call_as_task(alice, "notes__whoami", {})
    assert created["status"] == "input_required", created
    return created["taskId"], created["_meta"]["lockgate/pending"]["id"]


async def _someone_else_lists(base: str, provider: Provider) -> None:
    """Bob lists the tools with his JWT: the restarted gateway's catalogue knows ``notes``
    again (before anyone does, an approver cannot decide a ``notes`` call)."""
    token = await provider.user_token("bob", GATEWAY)
    async with mcp_http_client(f"{base}/mcp", "auto", token) as bob:
        assert "notes__whoami" in {t.name for t in (await bob.list_tools()).tools}


async def _record(base: str, approval: str) -> dict[str, Any]:
    async with rest(base, APPROVER) as api:
        found: dict[str, Any] = (await api.get(f"/api/approvals/{approval}")).json()
    return found


def _results(events: list[Event], call_id: str) -> list[dict[str, Any]]:
    return [e.data for e in events if e.type == "tool.result" and e.data["call_id"] == call_id]


@pytest.mark.parametrize("mode", MODES)
async def test_a_task_approved_after_a_restart_whose_caller_is_gone_fails_once_naming_the_fix(
    tmp_path: Path, provider: Provider, upstream: Upstream, mode: str
) -> None:
    async with _as_alice(tmp_path, provider, upstream) as (config, token):
        task_id, approval = await _held_as_task(config, mode, token)
        seen = len(upstream.seen.claims)
        async with gateway_on(config) as (base, events):  # the restarted gateway
            async with rest(base, APPROVER) as api:
                early = await api.post(
                    f"/api/approvals/{approval}/decision", json={"decision": "approve"}
                )
            await _someone_else_lists(base, provider)
            call_id = await approve(base, approval)
            async with _caller(base, config, mode, token) as alice:  # polls, never re-issues
                ended = await until_ended(alice, task_id)
            record = await _record(base, approval)
    assert early.status_code == 422  # nobody has listed 'notes' since the restart: told why
    assert "'notes' may be down or starting, or, if reached with each caller's" in early.text
    assert ended["status"] == "failed"
    message = ended["statusMessage"]
    assert "'notes'" in message
    assert "approved after the gateway restarted" in message
    assert "lockgate keeps no caller token for token_exchange server 'notes'" in message
    assert "the caller must call again" in message
    assert record["state"] == "failed"
    [result] = _results(events, call_id)  # on record once
    assert result["is_error"] is True
    assert "the caller must call again" in str(result["response"])
    assert {c["sub"] for c in upstream.seen.claims[seen:]} == {"bob"}  # never as anyone else


@pytest.mark.parametrize("mode", MODES)
async def test_a_task_approved_after_a_restart_runs_as_its_caller_once_it_reissues_the_call(
    tmp_path: Path, provider: Provider, upstream: Upstream, mode: str
) -> None:
    async with _as_alice(tmp_path, provider, upstream) as (config, token):
        task_id, approval = await _held_as_task(config, mode, token)
        async with gateway_on(config) as (base, events):
            async with mcp_http_client(f"{base}/mcp", mode, token) as back:
                again = await back.call_tool("notes__whoami", {})  # held again, then pending
            assert again.meta is not None
            assert again.meta["lockgate/pending"]["id"] == approval
            call_id = await approve(base, approval)
            async with _caller(base, config, mode, token) as alice:
                ended = await until_ended(alice, task_id)
                outcome = ended.get("result") or await request(alice, "tasks/result", task_id)
            record = await _record(base, approval)
    assert ended["status"] == "completed", ended
    me = outcome["structuredContent"]
    assert (me["sub"], me["aud"]) == ("alice", upstream.url)
    assert record["state"] == "done"
    [result] = _results(events, call_id)  # run once
    assert result["is_error"] is False


@pytest.mark.parametrize("mode", MODES)
async def test_a_call_approved_after_a_restart_runs_as_its_caller_when_reissued(
    tmp_path: Path, provider: Provider, upstream: Upstream, mode: str
) -> None:
    async with _as_alice(tmp_path, provider, upstream) as (config, token):
        async with (
            gateway_on(config) as (base, _events),
            mcp_http_client(f"{base}/mcp", mode, token) as alice,
        ):
            pending = await alice.call_tool("notes__whoami", {})  # held 1 s, then "pending"
        assert pending.is_error
        assert pending.meta is not None
        approval = pending.meta["lockgate/pending"]["id"]
        async with gateway_on(config) as (base, events):
            await _someone_else_lists(base, provider)
            call_id = await approve(base, approval)
            async with mcp_http_client(f"{base}/mcp", mode, token) as alice:
                ran = await alice.call_tool("notes__whoami", {})
            record = await _record(base, approval)
    assert not ran.is_error, ran
    assert ran.structured_content is not None
    assert (ran.structured_content["sub"], ran.structured_content["aud"]) == (
        "alice",
        upstream.url,
    )
    assert record["state"] == "done"
    [result] = _results(events, call_id)
    assert result["is_error"] is False
