"""A database outage: calls that need a decision fail closed naming the database, allowed calls
go on when ``on_outage: serve_allowed`` says so (and fail closed when it does not), and the
gateway recovers by itself once the database is back. The outage is a cut TCP link
(`pg_support.CuttableLink`) between an in-process gateway and the test server."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from approvals_e2e_support import marker, pending_meta, text_of
from pg_e2e_support import BUDGET_TOOL, replica_config, session_client
from pg_support import CuttableLink, cuttable_link, fresh_schema
from support import serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app

HELD = "recorder__record_brief"


@pytest.fixture
async def link() -> AsyncIterator[CuttableLink]:
    async with cuttable_link() as link:
        yield link


@contextlib.asynccontextmanager
async def _client(tmp_path: Path, link: CuttableLink, on_outage: str) -> AsyncIterator[Any]:
    """A client of a gateway on a fresh schema through ``link``, its first call made (all up)."""
    async with fresh_schema() as schema:
        config = replica_config(
            tmp_path, schema, dsn=link.dsn, on_outage=on_outage, connect_timeout=0.5
        )
        async with (
            serve_asgi(build_app(Gateway.from_config(config))) as base,
            session_client(f"{base}/mcp", "auto") as client,
        ):
            await client.call_tool(BUDGET_TOOL, {"value": marker("free")})
            yield client


async def test_an_outage_fails_held_calls_closed_serves_allowed_ones_and_recovers(
    tmp_path: Path, link: CuttableLink, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCKGATE_REPLICA", "solo")
    async with _client(tmp_path, link, "serve_allowed") as client:
        link.cut()
        allowed = await client.call_tool(BUDGET_TOOL, {"value": marker("free")})
        refused = await client.call_tool(HELD, {"value": marker("held")})
        link.restore()
        held = await client.call_tool(HELD, {"value": marker("held-later")})
    assert text_of(allowed).startswith("recorded ")
    assert refused.is_error
    assert text_of(refused).startswith("Not executed: PostgreSQL at 127.0.0.1:")
    assert f":{link.port}/postgres" in text_of(refused)
    assert pending_meta(held)["state"] == "pending"  # held on record again: recovered


async def test_fail_closed_refuses_even_allowed_calls_while_the_database_is_away(
    tmp_path: Path, link: CuttableLink, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCKGATE_REPLICA", "solo")
    async with _client(tmp_path, link, "fail_closed") as client:
        link.cut()
        refused = await client.call_tool(BUDGET_TOOL, {"value": marker("free")})
        link.restore()
        allowed = await client.call_tool(BUDGET_TOOL, {"value": marker("free")})
    assert refused.is_error
    assert "is unreachable" in text_of(refused)
    assert text_of(allowed).startswith("recorded ")
