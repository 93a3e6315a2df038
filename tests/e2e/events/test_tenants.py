"""Tenants partition calls and events outright: an approver or subscriber of one tenant never
lists, reads, decides or streams another tenant's calls, and credentials without a tenant see
only untenanted ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
from events_e2e_support import local_config, watching
from support import serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets.context import CallContext, Principal

POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - id: ops-holds
    tools: [local__held]
    effect: ask
    approval: {approvers: ["role:ops"], hold: 0s}
"""
TENANTS = {"acme": "agent:a", "globex": "agent:g", None: "agent:n"}
"""Each tenant's agent (``None``: no tenant)."""


def _credential(kind: str, tenant: str | None, **extra: Any) -> dict[str, Any]:
    name = tenant or "none"
    entry = {"id": f"{kind}:{name}", "token": f"{kind}-{name}-token", **extra}
    return {**entry, "tenant": tenant} if tenant else entry


def _config(tmp_path: Path) -> Path:
    auth = {
        "approvers": [_credential("ops", t, roles=["ops"]) for t in TENANTS],
        "subscribers": [_credential("dash", t) for t in TENANTS],
    }
    approvals = {"store": "sqlite", "path": str(tmp_path / "pending.db")}
    return local_config(tmp_path, POLICY, auth, approvals)


def _api(base: str, tenant: str | None) -> httpx2.AsyncClient:
    token = f"ops-{tenant or 'none'}-token"
    return httpx2.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"})


async def test_each_tenant_sees_decides_and_streams_only_its_own_calls(tmp_path: Path) -> None:
    held: dict[str | None, str] = {}
    async with (
        Gateway.from_config(_config(tmp_path)) as gateway,
        serve_asgi(build_app(gateway, manage_gateway=False)) as base,
        watching(base, "dash-acme-token") as acme_events,
        watching(base, "dash-none-token") as untenanted_events,
        _api(base, "acme") as acme,
        _api(base, "globex") as globex,
        _api(base, None) as untenanted,
    ):
        for tenant, agent in TENANTS.items():
            ctx = CallContext(principal=Principal(id=agent, tenant=tenant))
            await gateway.call_tool("local__free", {"note": agent}, ctx)
            await gateway.call_tool("local__held", {"note": agent}, ctx)
            (call,) = await gateway.store.list(principal=agent)
            held[tenant] = call.id
            assert call.tenant == tenant

        for tenant, client in ((None, untenanted), ("acme", acme), ("globex", globex)):
            listed = (await client.get("/api/approvals")).json()["items"]
            assert [c["id"] for c in listed] == [held[tenant]]
            for other, id in held.items():
                if other != tenant:
                    assert (await client.get(f"/api/approvals/{id}")).status_code == 404
                    refused = await client.post(
                        f"/api/approvals/{id}/decision", json={"decision": "approve"}
                    )
                    assert refused.status_code == 404
        decided = await acme.post(
            f"/api/approvals/{held['acme']}/decision", json={"decision": "deny"}
        )
        assert decided.status_code == 200, decided.text

        with anyio.fail_after(30):
            await acme_events.until(lambda seen: _types(seen) >= {"tool.approval.resolved"})
            await untenanted_events.until(lambda seen: "tool.approval.requested" in _types(seen))
    assert {e["data"]["tenant"] for e in acme_events} == {"acme"}
    assert {e["data"]["principal"] for e in acme_events} == {"agent:a"}
    assert _types(acme_events) >= {"tool.call", "tool.result", "tool.approval.requested"}
    assert {e["data"]["principal"] for e in untenanted_events} == {"agent:n"}
    assert all("tenant" not in e["data"] for e in untenanted_events)


def _types(seen: list[dict[str, Any]]) -> set[str]:
    return {e["type"] for e in seen}
