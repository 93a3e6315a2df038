"""``lockgate connections set|list|revoke`` on a served gateway: the secret is read from standard
input, set for the token's own principal, listed without the secret, and revoked."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
from credentials_support import AGENTS, SECRETS, credentials_config, secret_stdio, vault_keys
from gateway_faces import CLI
from support import serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app

ALICE = "agent:alice"


async def _lockgate(base: str, *args: str, stdin: str = "") -> tuple[int, str]:
    env = {**os.environ, "LOCKGATE_URL": base, "LOCKGATE_TOKEN": AGENTS[ALICE]}
    env.pop("LOCKGATE_APPROVER_TOKEN", None)
    done = await anyio.run_process([*CLI, *args], input=stdin.encode(), env=env, check=False)
    return done.returncode, (done.stdout + done.stderr).decode()


async def test_a_user_sets_lists_and_revokes_their_own_secret_from_the_cli(
    tmp_path: Path,
) -> None:
    with vault_keys():
        config = credentials_config(tmp_path, [secret_stdio("local")])
        gateway = Gateway.from_config(config)
        async with serve_asgi(build_app(gateway)) as base:
            secret = SECRETS[ALICE]
            code, said = await _lockgate(base, "connections", "set", "local", stdin=secret + "\n")
            assert code == 0, said
            assert said.endswith(f": {ALICE} connected to local\n")
            assert await gateway.parts.vault.secret("local", ALICE) == secret  # type: ignore[union-attr]

            code, listed = await _lockgate(base, "connections", "list", "--json")
            assert code == 0, listed
            [item] = json.loads(listed)
            assert (item["server"], item["principal"]) == ("local", ALICE)

            code, said = await _lockgate(base, "connections", "revoke", "local")
            assert code == 0, said
            assert "revoked" in said
            code, said = await _lockgate(base, "connections", "revoke", "local")
            assert code != 0
            assert "you have no connection to 'local'" in said
            assert secret not in listed + said
