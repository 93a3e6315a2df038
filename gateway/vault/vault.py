"""`Vault`: per-principal upstream secrets, sealed at rest, with events on every change.

The vault is the only code that holds a secret in clear: it seals on `set`, opens on `secret`
(for the connection pool, never for a page), and shows anyone else a `Connection` (id, server,
principal, times). Its events, ``credential.connected`` and ``credential.revoked``, carry the
same and nothing more. What it opened is used again for a moment (`RecentReads`: a change made
by another replica counts within a second, one made here at once).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace

from gateway.events.model import Event
from gateway.vault.cipher import Keyring
from gateway.vault.errors import VaultError
from gateway.vault.recent import RecentReads
from gateway.vault.record import Connection, SealedRecord
from gateway.vault.store import VaultStore

__all__ = ["MAX_SECRET", "Listener", "Record", "Vault"]

Record = Callable[[Event], Awaitable[None]]
Listener = Callable[[str, str], Awaitable[object]]
"""Told ``(server, principal)`` after a secret was set or revoked (a pool opens or closes)."""
MAX_SECRET = 16 << 10
"""The longest secret accepted (characters): a header value or environment variable."""


async def _no_record(event: Event) -> None:
    return None


class Vault:
    """Secrets by (server, principal), sealed with ``keyring``'s current key in ``store``.

    Args:
        store: Where sealed records live.
        keyring: The current key and the older ones still readable.
        record: Puts an event on record (audit, then the bus).
        recent: What was opened a moment ago (default: for `gateway.vault.recent.FRESH_FOR`).
    """

    def __init__(
        self,
        store: VaultStore,
        keyring: Keyring,
        record: Record = _no_record,
        recent: RecentReads | None = None,
    ) -> None:
        self.store = store
        self.keyring = keyring
        self.record = record
        self.listeners: list[Listener] = []
        self.recent = recent or RecentReads()

    async def set(
        self,
        server: str,
        principal: str,
        secret: str,
        *,
        mode: str = "secret",
        details: Mapping[str, object] | None = None,
    ) -> Connection:
        """Store ``principal``'s secret for ``server`` (replacing one set before); ``mode`` and
        ``details`` (never a secret: scopes, expiry) go into the ``credential.connected`` event.

        Raises:
            VaultError: the secret is empty, too long, or has a line break or NUL (it must be
                usable as a header value and an environment variable).
        """
        _check(secret)
        now = time.time()
        before = await self.store.get(server, principal)
        if before is None:
            id = uuid.uuid4().hex
            connection = Connection(
                id=id, server=server, principal=principal, created_at=now, updated_at=now
            )
        else:
            connection = replace(before.connection, updated_at=now)
        await self._put(connection, secret)
        data = {**_data(connection, mode), **(details or {})}
        await self.record(Event(type="credential.connected", data=data))
        await self._tell(server, principal)
        return connection

    async def update(self, server: str, principal: str, secret: str) -> Connection | None:
        """Seal ``secret`` in place of ``principal``'s existing one for ``server`` (a refreshed
        token): the same connection, no event, no listener told; None when there is none.

        Raises:
            VaultError: as `set`.
        """
        _check(secret)
        before = await self.store.get(server, principal)
        if before is None:
            return None
        connection = replace(before.connection, updated_at=time.time())
        await self._put(connection, secret)
        return connection

    async def _put(self, connection: Connection, secret: str) -> None:
        c = connection
        key, sealed = self.keyring.seal(secret, server=c.server, principal=c.principal)
        self.recent.forget(c.server, c.principal)
        try:
            await self.store.put(SealedRecord(connection=connection, key_id=key, sealed=sealed))
        finally:
            self.recent.forget(c.server, c.principal)  # a read meanwhile saw the old one

    async def _tell(self, server: str, principal: str) -> None:
        for listener in self.listeners:
            await listener(server, principal)

    async def secret(self, server: str, principal: str) -> str | None:
        """``principal``'s secret for ``server`` in clear, or None when none is set.

        Raises:
            VaultError: the record does not open (`VaultKeyMissing`: its key is not held).
        """
        found = await self.entry(server, principal)
        return None if found is None else found[1]

    async def entry(
        self, server: str, principal: str, *, fresh: bool = False
    ) -> tuple[Connection, str] | None:
        """``principal``'s connection to ``server`` and its secret in clear, or None; opened a
        moment ago (`RecentReads`) unless ``fresh`` (read from the store: what a refresh
        under its lock must see).

        Raises:
            VaultError: as `secret`.
        """
        if not fresh and (known := self.recent.get(server, principal)) is not None:
            return known
        found = await self.store.get(server, principal)
        if found is None:
            return None
        opened = (found.connection, self._open(found))
        self.recent.keep(*opened)
        return opened

    def _open(self, found: SealedRecord) -> str:
        c = found.connection
        return self.keyring.open(
            found.key_id, found.sealed, server=c.server, principal=c.principal, connection_id=c.id
        )

    async def revoke(
        self, server: str, principal: str, *, by: str, mode: str = "secret"
    ) -> Connection | None:
        """Forget ``principal``'s secret for ``server``; the connection it had, or None."""
        self.recent.forget(server, principal)
        found = await self.store.get(server, principal)
        if found is None or not await self.store.delete(server, principal):
            return None
        self.recent.forget(server, principal)
        data = {**_data(found.connection, mode), "by": by}
        await self.record(Event(type="credential.revoked", data=data))
        await self._tell(server, principal)
        return found.connection

    async def connections(self, principal: str | None = None) -> list[Connection]:
        """Every connection (of ``principal`` only, when given), without secrets."""
        return [found.connection for found in await self.store.all(principal)]

    async def rotate(self) -> int:
        """Seal every record again with the current key; how many were re-sealed.

        Raises:
            VaultKeyMissing: a record's key is not in the ring (nothing after it is changed).
        """
        count = 0
        for found in await self.store.all():
            if found.key_id == self.keyring.current_id:
                continue
            c = found.connection
            secret = self._open(found)
            key, sealed = self.keyring.seal(secret, server=c.server, principal=c.principal)
            await self.store.put(replace(found, key_id=key, sealed=sealed))
            count += 1
        self.recent.clear()
        return count

    async def close(self) -> None:
        await self.store.close()


def _check(secret: str) -> None:
    if not secret or len(secret) > MAX_SECRET or any(c in secret for c in "\n\r\0"):
        raise VaultError(
            f"a secret must be 1 to {MAX_SECRET} characters on one line, without NUL (the "
            "value itself is not repeated here)"
        )


def _data(connection: Connection, mode: str) -> dict[str, object]:
    return {
        "connection_id": connection.id,
        "server": connection.server,
        "principal": connection.principal,
        "mode": mode,
    }
