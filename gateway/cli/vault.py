"""``lockgate vault rotate --new-key env:NAME``: seal every vault record again with a new key.

It opens the configured store directly (run it where the gateway's config and key are): every
record sealed with ``vault.key`` (or one of ``vault.previous_keys``) is opened and sealed with
the new key. Then point ``vault.key`` at the new key (keep the old one in ``previous_keys``
until every replica restarted) and restart.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import anyio

from gateway.vault import Vault
from gateway.wiring.checks import load_config
from gateway.wiring.stores import shared_backend
from gateway.wiring.vault import keyring, vault_store

__all__ = ["register"]


async def _rotate(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    shared = shared_backend(config)
    vault = Vault(vault_store(config, shared), keyring(config, current=args.new_key))
    try:
        count = await vault.rotate()
    finally:
        await vault.close()
        if shared is not None:
            await shared.database.close()
    print(
        f"{count} record(s) sealed again with key {vault.keyring.current_id}: now set vault.key "
        f"to {args.new_key} and restart the gateway"
    )
    return 0


def _sync(run: Callable[[argparse.Namespace], Any]) -> Callable[[argparse.Namespace], int]:
    def command(args: argparse.Namespace) -> int:
        code: int = anyio.run(run, args)
        return code

    return command


def register(commands: Any, *, config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``vault rotate``."""
    vault = commands.add_parser("vault", help="the encrypted store of per-caller secrets")
    actions = vault.add_subparsers(dest="vault_command", required=True, metavar="ACTION")
    rotate = actions.add_parser("rotate", help="seal every record again with a new key")
    rotate.add_argument(
        "--new-key", required=True, metavar="env:NAME", help="the variable holding the new key"
    )
    config_option(rotate)
    rotate.set_defaults(func=_sync(_rotate))
