"""A rule's preview: a read-only tool the approvers see the result of beside a held call, its
arguments mapped from the call's, run under policy as the caller (a preview the policy does
not allow shows as not run), once, in a session of its own; on the REST API's context pack and
in ``lockgate approvals show``; both eras.

Real parts: the echo server over stdio, the gateway under uvicorn, `mcp.Client`, the REST API.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2
import pytest
from gateway_faces import HTTP_FACES, Face, lockgate, open_client
from held_config_support import held_config
from support import serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app

ALICE = "preview-alice-token"
POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - id: writes-are-held
    tools: [echo__echo]
    when: 'args.text.startsWith("write")'
    effect: ask
    approval: {hold: 0s}
    preview: {tool: echo__echo, args: {text: "now: {args.text}"}}
  - id: weather-is-held
    tools: [echo__weather]
    effect: ask
    approval: {hold: 0s}
    preview: {tool: echo__whoami}
  - id: nobody-asks-who
    tools: [echo__whoami]
    effect: deny
"""


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_preview_runs_once_under_policy_and_a_denied_one_shows_as_not_run(
    tmp_path: Path, face: Face
) -> None:
    config = held_config(tmp_path, POLICY, ALICE)
    gateway = Gateway.from_config(config)
    session = {"Lockgate-Session": "preview-test"}
    async with (
        serve_asgi(build_app(gateway)) as base,
        open_client(face, config=config, url=f"{base}/mcp", headers=session) as client,
        httpx2.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {ALICE}"}) as api,
        gateway.events.subscribe(["tool.result"]) as results,
    ):
        write = await client.call_tool("echo__echo", {"text": "write Oslo"})
        weather = await client.call_tool("echo__weather", {"city": "Oslo"})
        write_id, weather_id = ((r.meta or {})["lockgate/pending"]["id"] for r in (write, weather))
        shown = (await api.get(f"/api/approvals/{write_id}")).json()["context"]
        again = (await api.get(f"/api/approvals/{write_id}")).json()["context"]
        denied = (await api.get(f"/api/approvals/{weather_id}")).json()["context"]
        with anyio.fail_after(30):
            ran = await anext(results)  # the preview's own call, through the chain
        cli = await anyio.to_thread.run_sync(
            lambda: lockgate("approvals", "show", write_id, "--url", base, "--token", ALICE)
        )

    assert shown["preview"] == {
        "tool": "echo__echo",
        "args": {"text": "now: write Oslo"},
        "ran": True,
        "is_error": False,
        "text": "now: write Oslo",
    }
    assert again["preview"] == shown["preview"]  # run once, kept
    assert ran.data["session_id"] == f"preview:{write_id}"  # in a session of its own
    # the caller's session holds its own calls only, after the preview ran too (the pack
    # leaves out the held call itself: its other held call is all it shows)
    assert [c["tool"] for c in again["session"]["recent"]] == ["echo__weather"]
    assert denied["preview"]["ran"] is False
    assert denied["preview"]["text"].startswith("Not run: the policy says deny")
    assert "  preview    echo__echo: now: write Oslo" in cli.stdout


def test_a_preview_on_a_rule_that_does_not_ask_is_a_located_error(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "version: 1\nrules:\n  - id: r\n    tools: [a__b]\n    effect: allow\n"
        "    preview: {tool: a__c}\n",
        encoding="utf-8",
    )
    checked = lockgate("policy", "check", str(policy))
    assert checked.returncode != 0
    assert f"{policy}:3" in checked.stdout + checked.stderr
    assert "preview is shown to approvers: it needs effect: ask" in checked.stdout + checked.stderr
