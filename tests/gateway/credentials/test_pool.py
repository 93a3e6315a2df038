"""The per-principal pool of a stdio server in secret mode, in process: an idle connection
closes after ``idle_timeout`` (its process ends, the next call starts another), a new secret
replaces the connection made with the old one, ``max_connections`` refuses one more with an
error naming the limit, and the server's tools are pinned like any upstream's."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from credentials_support import credentials_config, secret_stdio, vault_keys

from gateway.gateway import Gateway
from gateway.vault import Vault
from toolsets.context import CallContext, Principal
from toolsets.refusal import failure_of
from toolsets.upstream.per_principal import PerPrincipalToolset, principal_key

ALICE, BOB = "agent:alice", "agent:bob"


@contextlib.asynccontextmanager
async def _gateway(tmp_path: Path, **credentials: Any) -> AsyncIterator[Gateway]:
    server = secret_stdio("local")
    server["credentials"] = {**server["credentials"], **credentials}
    with vault_keys():
        async with Gateway.from_config(credentials_config(tmp_path, [server])) as gateway:
            yield gateway


def _parts(gateway: Gateway) -> tuple[Vault, PerPrincipalToolset]:
    vault = gateway.parts.vault
    assert vault is not None
    found = [t for t in _walk(gateway.parts.combined) if isinstance(t, PerPrincipalToolset)]
    return vault, found[0]


def _walk(toolset: Any) -> list[Any]:
    inner = [*getattr(toolset, "toolsets", ()), *filter(None, [getattr(toolset, "wrapped", None)])]
    return [toolset, *(t for child in inner for t in _walk(child))]


async def _whoami(gateway: Gateway, principal: str) -> Any:
    ctx = CallContext(principal=Principal(id=principal))
    return await gateway.call_tool("local__whoami", {}, ctx)


async def test_an_idle_connection_closes_and_the_next_call_opens_another(tmp_path: Path) -> None:
    async with _gateway(tmp_path, idle_timeout=0.5) as gateway:
        vault, pool = _parts(gateway)
        await vault.set("local", ALICE, "first")
        before = (await _whoami(gateway, ALICE)).structured_content["pid"]
        with anyio.fail_after(30):
            await pool.wait_closed(ALICE)
        assert ALICE not in pool.entries
        after = (await _whoami(gateway, ALICE)).structured_content["pid"]
    assert after != before


async def test_a_connection_in_use_stays_open_within_its_idle_timeout(tmp_path: Path) -> None:
    async with _gateway(tmp_path, idle_timeout=300) as gateway:
        vault, _ = _parts(gateway)
        await vault.set("local", ALICE, "first")
        pids = {(await _whoami(gateway, ALICE)).structured_content["pid"] for _ in range(3)}
    assert len(pids) == 1


async def test_a_new_secret_replaces_the_connection_made_with_the_old_one(tmp_path: Path) -> None:
    async with _gateway(tmp_path) as gateway:
        vault, _ = _parts(gateway)
        await vault.set("local", ALICE, "first")
        first = (await _whoami(gateway, ALICE)).structured_content
        await vault.set("local", ALICE, "second")
        second = (await _whoami(gateway, ALICE)).structured_content
    assert (first["value"], second["value"]) == ("first", "second")
    assert first["pid"] != second["pid"]


async def test_a_server_at_max_connections_refuses_one_more_naming_the_limit(
    tmp_path: Path,
) -> None:
    async with _gateway(tmp_path, max_connections=1) as gateway:
        vault, _ = _parts(gateway)
        await vault.set("local", ALICE, "alice's")
        await vault.set("local", BOB, "bob's")
        assert (await _whoami(gateway, ALICE)).structured_content["value"] == "alice's"
        refused = await _whoami(gateway, BOB)
    assert refused.is_error
    assert "credentials.max_connections" in refused.first_text()
    assert (failure_of(refused) or {}).get("kind") == "upstream_unavailable"


async def test_the_tools_of_a_secret_mode_server_are_pinned(tmp_path: Path) -> None:
    async with _gateway(tmp_path) as gateway:
        vault, _ = _parts(gateway)
        await vault.set("local", ALICE, "alice's")
        await _whoami(gateway, ALICE)
        pinned = {(p.server, p.tool) for p in await gateway.pins.store.load()}
    assert ("local", "whoami") in pinned


async def test_a_call_whose_secret_the_vault_cannot_open_names_the_key_and_the_fix(
    tmp_path: Path,
) -> None:
    async with _gateway(tmp_path) as gateway:
        vault, _ = _parts(gateway)
        await vault.set("local", ALICE, "sealed under the first key")
        found = await vault.store.get("local", ALICE)
        assert found is not None
        await vault.store.put(dataclasses.replace(found, key_id="0123456789abcdef"))
        vault.recent.clear()  # as when its moment is over: the store was written behind it
        failed = await _whoami(gateway, ALICE)
    assert failed.is_error
    assert "sealed with key 0123456789abcdef" in failed.first_text()
    assert "lockgate vault rotate" in failed.first_text()
    assert "sealed under the first key" not in failed.first_text()
    assert (failure_of(failed) or {}).get("kind") == "gateway_unavailable"


async def test_the_same_id_in_two_tenants_is_two_principals_each_with_their_own_secret(
    tmp_path: Path,
) -> None:
    acme, globex = Principal(id=ALICE, tenant="acme"), Principal(id=ALICE, tenant="globex")
    async with _gateway(tmp_path) as gateway:
        vault, pool = _parts(gateway)
        await vault.set("local", principal_key(acme), "acme's")
        await vault.set("local", principal_key(globex), "globex's")
        ones = [
            await gateway.call_tool("local__whoami", {}, CallContext(principal=who))
            for who in (acme, globex)
        ]
        untenanted = await _whoami(gateway, ALICE)
        open_keys = set(pool.entries)
    assert [r.structured_content["value"] for r in ones] == ["acme's", "globex's"]
    assert ones[0].structured_content["pid"] != ones[1].structured_content["pid"]
    assert untenanted.is_error
    assert "acme's" not in untenanted.first_text()
    assert "globex's" not in untenanted.first_text()
    assert open_keys == {principal_key(acme), principal_key(globex)}
