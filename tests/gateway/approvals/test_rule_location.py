"""Where a held call's rule is written, on the card's context pack (``GET /api/approvals/{id}``)
and in ``lockgate approvals show``: a policy file beside the config is named relative to the
config file's directory, one elsewhere as the config gives it (not the resolved absolute path
of the gateway's machine)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from held_config_support import SECRET_ECHO_POLICY
from support import echo_upstream, serve_asgi, write_config

from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets import CallContext, Principal

TOKEN = "rule-location-alice-token"


def _config(directory: Path, policy: Path, given: str) -> Path:
    policy.parent.mkdir(parents=True, exist_ok=True)
    policy.write_text(SECRET_ECHO_POLICY, encoding="utf-8")
    return write_config(
        directory,
        [echo_upstream()],
        policies={"files": [given]},
        approvals={"store": "memory"},
        auth={"approvers": [{"id": "user:alice", "token": TOKEN}]},
    )


@pytest.mark.parametrize(
    ("place", "shown"),
    [
        pytest.param("policies/held.yaml", "policies/held.yaml:4", id="relative-in-config"),
        pytest.param("ABS/policies/held.yaml", "policies/held.yaml:4", id="absolute-beside"),
        pytest.param("ELSEWHERE/held.yaml", "ELSEWHERE/held.yaml:4", id="absolute-elsewhere"),
    ],
)
async def test_a_rule_is_shown_where_the_config_names_its_file(
    tmp_path: Path, place: str, shown: str
) -> None:
    directory, elsewhere = tmp_path / "gateway", tmp_path / "shared"
    directory.mkdir()
    given = place.replace("ABS", str(directory)).replace("ELSEWHERE", str(elsewhere))
    policy = directory / place if not place.startswith(("ABS", "ELSEWHERE")) else Path(given)
    expected = shown.replace("ELSEWHERE", str(elsewhere))
    gateway = Gateway.from_config(_config(directory, policy, given))
    ctx = CallContext(principal=Principal(id="agent:a"))
    async with serve_asgi(build_app(gateway)) as base:
        held = await gateway.call_tool("echo__echo", {"text": "secret plans"}, ctx)
        id = (held.meta or {})["lockgate/pending"]["id"]
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(base_url=base, headers=headers) as api:
            rule = (await api.get(f"/api/approvals/{id}")).json()["context"]["rule"]
        command = [sys.executable, "-m", "gateway.cli", "approvals", "show", id]
        cli = await anyio.run_process([*command, "--url", base, "--token", TOKEN], check=False)

    assert rule["where"] == expected
    assert f"rule 'secrets-need-a-look' ({expected}) holds calls of echo__echo" in rule["text"]
    assert cli.returncode == 0, cli.stderr.decode()
    assert f"({expected})" in cli.stdout.decode()
