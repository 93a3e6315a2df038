"""The vault at rest: secrets are sealed (never stored in clear), unreadable with another key,
and readable again after ``lockgate vault rotate --new-key``; in the SQLite file and in
PostgreSQL. What it opened is used again for a moment: a revoke counts at once in its own
process, and within `FRESH_FOR` seconds in another."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import asyncpg
import pytest
from credentials_support import KEY_VAR, NEW_KEY_VAR, SECRETS, credentials_config, vault_keys
from gateway_faces import CLI
from pg_support import PG_DSN, fresh_schema, pg_storage

from gateway.vault import Vault, VaultError, VaultKeyMissing
from gateway.vault.recent import FRESH_FOR, RecentReads
from gateway.wiring.checks import load_config
from gateway.wiring.stores import shared_backend
from gateway.wiring.vault import build_vault

SERVERS = [{"name": "web", "transport": "http", "url": "http://127.0.0.1:9/mcp"}]
SECRET_WEB = {**SERVERS[0], "credentials": {"mode": "secret", "header": "Authorization"}}


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[dict[str, object]]:
    """The config sections of the store: the SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield {}
        return
    async with fresh_schema() as schema:
        yield {"storage": pg_storage(schema)}


async def _open(config: Path) -> Vault:
    loaded = load_config(config)
    vault = build_vault(loaded, shared_backend(loaded), _ignore)
    assert vault is not None
    return vault


async def _ignore(event: object) -> None:
    return None


async def _close(vault: Vault) -> None:
    await vault.close()
    database = getattr(vault.store, "database", None)
    if database is not None:
        await database.close()


async def _stored_bytes(config: Path, sections: dict[str, object]) -> bytes:
    if not sections:
        return b"".join(p.read_bytes() for p in sorted(config.parent.glob("pending.db*")))
    schema = sections["storage"]["schema"]  # type: ignore[index]
    conn = await asyncpg.connect(PG_DSN)
    try:
        rows = await conn.fetch(f'SELECT * FROM "{schema}".credentials')
    finally:
        await conn.close()
    return repr([tuple(row) for row in rows]).encode()


def _rotate(config: Path) -> subprocess.CompletedProcess[str]:
    argv = [*CLI, "vault", "rotate", "-c", str(config), "--new-key", f"env:{NEW_KEY_VAR}"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


async def test_the_vault_is_unreadable_without_its_key_and_readable_after_rotation(
    tmp_path: Path, store: dict[str, object]
) -> None:
    with vault_keys():
        config = credentials_config(tmp_path, [SECRET_WEB], **store)
        vault = await _open(config)
        for principal, secret in SECRETS.items():
            await vault.set("web", principal, secret)
        await _close(vault)
        stored = await _stored_bytes(config, store)
        assert all(secret.encode() not in stored for secret in SECRETS.values())

        old_key = os.environ[KEY_VAR]
        os.environ[KEY_VAR] = os.environ[NEW_KEY_VAR]  # the new key only: nothing opens
        vault = await _open(config)
        with pytest.raises(VaultKeyMissing) as missing:
            await vault.secret("web", "agent:alice")
        await _close(vault)
        assert "lockgate vault rotate" in str(missing.value)
        assert all(secret not in str(missing.value) for secret in SECRETS.values())

        os.environ[KEY_VAR] = old_key
        rotated = _rotate(config)
        assert rotated.returncode == 0, rotated.stderr
        assert rotated.stdout.startswith("2 record(s) sealed again with key ")
        assert all(secret not in rotated.stdout + rotated.stderr for secret in SECRETS.values())

        os.environ[KEY_VAR] = os.environ[NEW_KEY_VAR]  # as the operator then sets vault.key
        vault = await _open(config)
        try:
            for principal, secret in SECRETS.items():
                assert await vault.secret("web", principal) == secret
        finally:
            await _close(vault)


async def test_a_sealed_secret_copied_to_another_principal_does_not_open(tmp_path: Path) -> None:
    with vault_keys():
        vault = await _open(credentials_config(tmp_path, [SECRET_WEB]))
        try:
            await vault.set("web", "agent:alice", SECRETS["agent:alice"])
            found = await vault.store.get("web", "agent:alice")
            assert found is not None
            moved = replace(found.connection, principal="agent:bob")
            await vault.store.put(
                found.__class__(connection=moved, key_id=found.key_id, sealed=found.sealed)
            )
            with pytest.raises(VaultError, match="does not open"):
                await vault.secret("web", "agent:bob")
        finally:
            await _close(vault)


class _Clock:
    """A clock the test moves (the vault's recent reads expire on it)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_a_revoke_counts_at_once_here_and_within_a_moment_on_another_replica(
    tmp_path: Path, store: dict[str, object]
) -> None:
    alice = "agent:alice"
    with vault_keys():
        config = credentials_config(tmp_path, [SECRET_WEB], **store)
        here, there = await _open(config), await _open(config)
        clock = _Clock()
        there.recent = RecentReads(clock=clock)
        try:
            await here.set("web", alice, SECRETS[alice])
            assert await there.secret("web", alice) == SECRETS[alice]
            await here.revoke("web", alice, by="user:ops")
            assert await here.secret("web", alice) is None  # at once where it was revoked
            assert await there.secret("web", alice) == SECRETS[alice]  # opened a moment ago
            clock.now += FRESH_FOR
            assert await there.secret("web", alice) is None  # the moment is over
            await there.set("web", alice, "replaced")
            assert await there.secret("web", alice) == "replaced"  # a write here: at once
        finally:
            await _close(here)
            await _close(there)
