"""``/api/connections`` refuses what it must: a server not in secret mode, a body naming another
principal, a secret that cannot be a header or variable (never echoed back), and callers
without a token."""

from __future__ import annotations

from pathlib import Path

import httpx2
from credentials_support import credentials_config, rest, secret_stdio, vault_keys
from support import ECHO_SERVER, serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app

ALICE = "agent:alice"
SHARED = {"name": "plain", "transport": "stdio", "command": "python", "args": [ECHO_SERVER]}


async def test_the_connections_api_refuses_what_it_must_without_echoing_secrets(
    tmp_path: Path,
) -> None:
    with vault_keys():
        config = credentials_config(tmp_path, [secret_stdio("local"), SHARED])
        gateway = Gateway.from_config(config)
        async with serve_asgi(build_app(gateway)) as base, rest(base, ALICE) as api:
            plain = await api.put("/api/connections/plain", json={"secret": "x"})
            other = await api.put(
                "/api/connections/local", json={"secret": "x", "principal": "agent:bob"}
            )
            split = await api.put("/api/connections/local", json={"secret": "line\nbreak-77"})
            empty = await api.put("/api/connections/local", json={"secret": ""})
            async with httpx2.AsyncClient(base_url=base) as anonymous:
                nobody = await anonymous.get("/api/connections")
            listed = await api.get("/api/connections")
    assert plain.status_code == 404
    assert "'plain' is not a server with per-caller credentials (those are: local)" in plain.text
    assert other.status_code == 422  # a secret is only ever the caller's own
    assert split.status_code == 400
    assert "break-77" not in split.text
    assert empty.status_code == 422
    assert nobody.status_code == 401
    assert listed.json() == {"items": []}
