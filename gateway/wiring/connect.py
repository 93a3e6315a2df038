"""The connect gate of per-caller servers (`gateway.connect`): built with the pools, bound to
the pending store once the approvals are, and told by the vault of each connection."""

from __future__ import annotations

from typing import Final

from gateway.approvals.store import PendingStore
from gateway.config.model import GatewayConfig
from gateway.connect import ConnectGate, ConnectLinks, Record
from gateway.connect.principal_connections import PrincipalConnections, VaultConnections
from gateway.vault import Vault
from toolsets.abstract import Toolset

__all__ = ["base_url", "bind_gate", "connect_gate", "connected", "with_connections"]

_LINKS_PURPOSE: Final = b"lockgate/connect-links/v1"


def base_url(config: GatewayConfig) -> str:
    """The gateway's URL as browsers reach it: ``auth.public_url``, else the listen address."""
    if config.auth.public_url is not None:
        return config.auth.public_url.rstrip("/")
    host = config.listen.host
    return f"http://{f'[{host}]' if ':' in host else host}:{config.listen.port}"


def connect_gate(config: GatewayConfig, key: bytes | None, vault: Vault) -> ConnectGate | None:
    """The gate holding calls of callers not connected yet, when a server has per-caller
    credentials; ``key`` seals its links (``approvals.request_state_key``), else a key derived
    from ``vault``'s current key: every process of the config opens them, so the links a
    ``lockgate stdio`` hands out work at the ``lockgate serve`` sharing its vault."""
    modes = {
        s.name: s.credentials.mode for s in config.enabled_servers() if s.credentials.per_principal
    }
    if not modes or config.vault is None:
        return None
    sealing = vault.keyring.derived(_LINKS_PURPOSE) if key is None else key
    return ConnectGate(config.connect, ConnectLinks(base_url(config), sealing), modes)


def bind_gate(gate: ConnectGate, store: PendingStore, record: Record, vault: Vault) -> None:
    """Bind ``gate`` to the pending store and the recorder, and have ``vault`` tell it of
    every connection."""

    async def connected(server: str, principal: str) -> bool:
        return await vault.store.get(server, principal) is not None

    gate.bind(store, record, connected)
    vault.listeners.append(gate.connected)


def with_connections(root: Toolset, vault: Vault) -> Toolset:
    """``root`` telling every call and listing below which servers its caller connected
    (``principal.connections``)."""
    connections = VaultConnections(vault)
    vault.listeners.append(connections.changed)
    return PrincipalConnections(root, connections)


def connected(
    root: Toolset,
    vault: Vault | None,
    gate: ConnectGate | None,
    store: PendingStore,
    record: Record,
) -> Toolset:
    """With a vault: ``gate`` bound (its held calls are pending calls in ``store``) and
    ``root`` telling policies ``principal.connections``; else ``root`` as it is."""
    if vault is None:
        return root
    if gate is not None:
        bind_gate(gate, store, record, vault)
    return with_connections(root, vault)
