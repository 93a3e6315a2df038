"""Tool pins are shared by replicas: a changed definition accepted on one replica is served by
the other at once (it hears the acceptance on the cluster's event stream)."""

from __future__ import annotations

from pathlib import Path

import anyio
from pg_support import fresh_schema, pg_storage
from support import echo_upstream, write_config

from gateway import Gateway
from toolsets.context import Principal

WEATHER = "echo__weather"


def config(directory: Path, schema: str, *, rug: str | None = None) -> Path:
    upstream = echo_upstream()
    if rug is not None:
        upstream["args"] += ["--rug", rug]
    directory.mkdir(exist_ok=True)
    return write_config(directory, [upstream], storage=pg_storage(schema))


async def test_a_definition_accepted_on_one_replica_is_served_by_the_other(
    tmp_path: Path,
) -> None:
    async with fresh_schema() as schema:
        async with Gateway.from_config(config(tmp_path / "first", schema)) as first:
            assert WEATHER in await first.tools()  # pinned (trust on first use), in PostgreSQL
        changed = config(tmp_path / "changed", schema, rug="description")
        async with Gateway.from_config(changed) as a, Gateway.from_config(changed) as b:
            assert WEATHER not in await a.tools()
            assert WEATHER not in await b.tools()
            told = anyio.Event()

            async def heard(_source: str) -> None:
                told.set()

            b.on_tools_changed(heard)
            record = await a.pins.get(WEATHER)
            assert record.changed_pin is not None
            alice = Principal(id="user:alice", roles=frozenset({"security"}))
            await a.accept_pin(WEATHER, pin=record.changed_pin, by=alice)
            with anyio.fail_after(30):
                await told.wait()
            assert WEATHER in await b.tools()
