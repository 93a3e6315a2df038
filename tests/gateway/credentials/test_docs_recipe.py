"""The secret-mode recipe of docs/credentials.md, run as written: its config (the upstream's URL
pointed at the test echo server) served on a free port, then its ``sh`` blocks: Alice sets her
key from standard input, lists her connection, revokes it; her calls in between reach the
upstream with her key, and after the revoke are refused ``not_connected``."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from credentials_support import vault_keys
from gateway_faces import echo_over, running
from paths import REPO
from support import mcp_http_client, serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app

PAGE = REPO / "docs" / "credentials.md"
ALICE_TOKEN, API_KEY = "alice-agent-token", "tracker-key-from-the-recipe"
LOCKGATE = f"{sys.executable} -m gateway.cli"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), re.S)


@pytest.fixture
async def upstream() -> AsyncIterator[str]:
    argv, port, url = echo_over("http", name="tracker")
    async with running([(argv, port)]):
        yield url


async def _sh(block: str, base: str) -> str:
    env = {**os.environ, "LOCKGATE_URL": base, "ALICE_TOKEN": ALICE_TOKEN}
    env["TRACKER_API_KEY"] = API_KEY
    script = block.replace(".venv/bin/lockgate", LOCKGATE)
    done = await anyio.run_process(["bash", "-euc", script], env=env, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


async def test_the_secret_mode_recipe_runs_as_written(tmp_path: Path, upstream: str) -> None:
    [config_text] = [b for b in _blocks("yaml") if "mode: secret" in b]
    serve, set_secret, manage = _blocks("sh")
    assert "lockgate serve -c credentials.yaml" in serve  # run here in process instead
    config = tmp_path / "credentials.yaml"
    config.write_text(config_text.replace("https://tracker.example.com/mcp", upstream))
    list_block, revoke_block = manage.strip().splitlines()
    with vault_keys():
        os.environ["LOCKGATE_VAULT_KEY"], os.environ["ALICE_TOKEN"] = (
            os.environ["LOCKGATE_TEST_VAULT_KEY"],
            ALICE_TOKEN,
        )
        try:
            gateway = Gateway.from_config(config)
            async with (
                serve_asgi(build_app(gateway)) as base,
                mcp_http_client(f"{base}/mcp", "auto", ALICE_TOKEN) as alice,
            ):
                assert "agent:alice connected to tracker" in await _sh(set_secret, base)
                who = await alice.call_tool("tracker__whoami", {})
                assert who.structured_content["authorization"] == f"Bearer {API_KEY}"
                listed = await _sh(list_block, base)
                assert "tracker" in listed
                assert API_KEY not in listed
                assert "revoked" in await _sh(revoke_block, base)
                refused = await alice.call_tool("tracker__whoami", {})
                assert refused.meta["lockgate/refusal"]["kind"] == "not_connected"
        finally:
            os.environ.pop("LOCKGATE_VAULT_KEY", None)
            os.environ.pop("ALICE_TOKEN", None)
