"""A resource subscription outlives its upstream: when the upstream process dies and comes back,
the gateway subscribes again, tells the sessions the lists changed, and updates flow again.

One upstream of each era: ``phoenix-dual`` is spoken to in 2026-07-28 (a listen stream per
resource), ``phoenix-legacy`` in 2025-11-25 (``resources/subscribe``).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
from gateway_faces import Face, open_client
from support import echo_upstream, write_config
from surface_support import STARTUP_WAIT, Heard, pid_of, serve_surface, subscribe, uri

NAMES = ("phoenix-dual", "phoenix-legacy")


async def test_subscriptions_are_renewed_when_their_upstreams_come_back(tmp_path: Path) -> None:
    servers = [echo_upstream(name, era=name.split("-")[1]) for name in NAMES]
    config = write_config(tmp_path, servers, startup_wait=STARTUP_WAIT)
    notes, heard = [uri(name, "echo://notes/again") for name in NAMES], Heard()

    async with serve_surface(config) as served:
        assert await served.gateway.wait_ready()
        await anyio.wait_all_tasks_blocked()  # their coming up is announced to nobody yet
        face = Face("http", "legacy")
        async with open_client(
            face, config=config, url=served.url, message_handler=heard
        ) as client:
            for note in notes:
                await subscribe(client, note)
            since = len(heard.changed)
            for name in NAMES:
                os.kill(pid_of(f"--name {name} "), signal.SIGKILL)
            # each lost, then back with its subscriptions: resources/list_changed each time
            await heard.until(lambda: heard.changed[since:].count("resources") == 2 * len(NAMES))
            for name in NAMES:
                await client.call_tool(f"{name}__write_note", {"note": "again", "text": "back"})
            await heard.until(lambda: set(notes) <= set(heard.updated))
