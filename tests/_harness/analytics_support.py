"""Helpers of the approval analytics tests: a served gateway with two security approvers, held
calls made in process (the policy holds them with ``hold: 0s``), the analytics as served."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
from approvals_e2e_support import AGENT, Rig, served_rig
from paths import TESTS

from toolsets import CallContext, Principal

POLICY = TESTS / "gateway" / "analytics" / "fixtures" / "policy.yaml"
CAROL = "user:carol"
CAROL_TOKEN = "analytics-carol-token"
"""A second approver with role ``security``."""


class Clock:
    """Unix seconds a test moves by hand (a store's ``clock``)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@contextlib.asynccontextmanager
async def analytics_rig(directory: Path) -> AsyncIterator[Rig]:
    """A gateway on the analytics policy, SQLite approvals, alice and carol as approvers."""
    carol = {"id": CAROL, "token": CAROL_TOKEN, "roles": ["security"]}
    async with served_rig(directory, policy=str(POLICY), approvers=[carol]) as rig:
        yield rig


async def held(rig: Rig, tool: str, args: dict[str, Any], who: str = AGENT) -> str:
    """Make one call in process as ``who``; the id of the pending call it is held as."""
    ctx = CallContext(principal=Principal(id=who))
    result = await rig.gateway.call_tool(tool, args, ctx)
    assert result.meta is not None, result
    assert "lockgate/pending" in result.meta, result
    return str(result.meta["lockgate/pending"]["id"])


async def analytics(api: httpx2.AsyncClient, **params: Any) -> dict[str, Any]:
    """``GET /api/analytics/approvals`` (200) as ``api``'s approver."""
    response = await api.get("/api/analytics/approvals", params=params)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def wait_expired(api: httpx2.AsyncClient, id: str) -> dict[str, Any]:
    """Poll the call until its deadline passed and it reads ``expired`` (reading sweeps)."""
    with anyio.fail_after(30):
        while True:
            response = await api.get(f"/api/approvals/{id}")
            assert response.status_code == 200, response.text
            if response.json()["state"] == "expired":
                return dict(response.json())
            await anyio.sleep(0.05)
