"""``lockgate db status | migrate``: the shared store's schema version, and migrating it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import anyio

from gateway.wiring.checks import load_config
from gateway.wiring.storage_check import migrate_storage, storage_status

__all__ = ["register"]


async def _status(args: argparse.Namespace) -> int:
    status = await storage_status(load_config(args.config))
    print(status.summary())
    return 0 if status.current == status.latest else 1


async def _migrate(args: argparse.Namespace) -> int:
    status, before = await migrate_storage(load_config(args.config))
    if before == status.current:
        print(f"{status.where}: schema version {status.current}, nothing to migrate")
    else:
        print(f"{status.where}: migrated from schema version {before} to {status.current}")
    return 0


def _sync(run: Callable[[argparse.Namespace], Any]) -> Callable[[argparse.Namespace], int]:
    def command(args: argparse.Namespace) -> int:
        code: int = anyio.run(run, args)
        return code

    return command


def register(commands: Any, *, config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``db status`` and ``db migrate`` to the ``lockgate`` parser."""
    db = commands.add_parser("db", help="the shared store: schema version, migrations")
    actions = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    status = actions.add_parser(
        "status", help="print the store and its schema version (exit 1 unless up to date)"
    )
    config_option(status)
    status.set_defaults(func=_sync(_status))
    migrate = actions.add_parser(
        "migrate", help="create or upgrade the store's schema (safe while replicas run)"
    )
    config_option(migrate)
    migrate.set_defaults(func=_sync(_migrate))
