"""The context pack everywhere a held call is told: the REST ``context`` (and ``lockgate
approvals show``) says who may still decide and how many votes remain; a Slack-format webhook's
text and a plain webhook's event carry the rule's condition (the part of ``a || b`` that held),
the session's previous call and who may decide, never the arguments' redacted values.

Real parts: the echo server over stdio, the gateway under uvicorn with two webhooks to a local
receiver under uvicorn, `mcp.Client` in both eras, the REST API as approvers, the CLI.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from gateway_faces import HTTP_FACES, Face, lockgate, open_client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from support import echo_upstream, serve_asgi, write_config

from gateway.gateway import Gateway
from gateway.http.app import build_app

ALICE, BOB = "notice-alice-token", "notice-bob-token"
TOKEN = "tok-4f1d2c9b8a7e6d5c"  # redacted by the rule: must reach no notice
POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - id: secret-or-classified
    tools: [echo__echo]
    when: 'args.text.startsWith("secret") || args.text.startsWith("classified")'
    effect: ask
    reason: echoing something sensitive
    redact: [args.token]
    approval:
      hold: 0s
      expires: 5m
      stages: [{approvers: ["role:security"], min: 2}]
"""
PART = 'args.text.startsWith("classified")'


@dataclass
class Hooks:
    """Collects what each webhook (``/slack``, ``/events``) receives."""

    bodies: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: {"slack": [], "events": []}
    )
    both: anyio.Event = field(default_factory=anyio.Event)

    async def hook(self, request: Request) -> Response:
        self.bodies[request.path_params["name"]].append(json.loads(await request.body()))
        if all(self.bodies.values()):
            self.both.set()
        return Response(status_code=204)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{name}", self.hook, methods=["POST"])])


def _config(directory: Path, hooks: str) -> Path:
    policy = directory / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    webhook = {"events": ["tool.approval.requested"], "allow_private": True, "backoff": 0.05}
    webhook["secret"] = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()
    return write_config(
        directory,
        [echo_upstream()],
        policies={"files": [str(policy)]},
        approvals={"store": "sqlite", "path": str(directory / "pending.db")},
        auth={
            "approvers": [
                {"id": "user:alice", "token": ALICE, "roles": ["security"]},
                {"id": "user:bob", "token": BOB, "roles": ["security"]},
            ]
        },
        events={
            "webhooks": [
                webhook | {"url": f"{hooks}/slack", "format": "slack"},
                webhook | {"url": f"{hooks}/events"},
            ]
        },
        startup_wait=60,
    )


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_notices_and_the_rest_context_say_which_part_held_what_came_before_and_who_decides(
    tmp_path: Path, face: Face
) -> None:
    hooks = Hooks()
    session = {"Lockgate-Session": "notice-test"}
    async with serve_asgi(hooks.app()) as hooks_base:
        config = _config(tmp_path, hooks_base)
        async with (
            serve_asgi(build_app(Gateway.from_config(config))) as base,
            open_client(face, config=config, url=f"{base}/mcp", headers=session) as client,
            httpx2.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {ALICE}"}) as api,
        ):
            first = await client.call_tool("echo__echo", {"text": "hello"})
            held = await client.call_tool("echo__echo", {"text": "classified", "token": TOKEN})
            pending_id = (held.meta or {})["lockgate/pending"]["id"]
            with anyio.fail_after(30):
                await hooks.both.wait()
            voted = await api.post(
                f"/api/approvals/{pending_id}/decision", json={"decision": "approve"}
            )
            shown = (await api.get(f"/api/approvals/{pending_id}")).json()
            cli = await anyio.to_thread.run_sync(
                lambda: lockgate("approvals", "show", pending_id, "--url", base, "--token", BOB)
            )

    assert not first.is_error
    assert voted.status_code == 200, voted.text
    deciding = shown["context"]["deciding"]
    assert (deciding["votes"], deciding["needed"], deciding["remaining"]) == (1, 2, 1)
    assert (deciding["voted"], deciding["others"]) == (["user:alice"], ["role:security"])
    assert deciding["text"].startswith("stage 1 of 1: 1 of 2 votes (user:alice voted), 1 more")
    assert f"approvers  {deciding['text']}" in cli.stdout  # the CLI says what the pack says
    rule = shown["context"]["rule"]
    assert [m["part"] for m in rule["matched"] if m["held"]] == [PART]
    assert rule["condition"].startswith(f"when {PART} (the part that held of: ")

    (slack,) = hooks.bodies["slack"]
    text = slack["text"]
    assert f"holds calls of echo__echo when {PART} (the part that held" in text
    assert "\nBefore this: echo__echo\n" in text
    assert "\nWho decides: stage 1 of 1: 0 of 2 votes, 2 more from role:security" in text
    assert "\nRequested " in text

    (event,) = hooks.bodies["events"]
    context = event["data"]["context"]
    assert context["rule"]["matched"] == [
        {"part": 'args.text.startsWith("secret")', "held": False},
        {"part": PART, "held": True},
    ]
    assert context["session"]["recent"] == [{"tool": "echo__echo", "ok": True}]
    assert context["deciding"]["remaining_total"] == 2
    assert context["caller"]["client"]["protocol_version"] == face.protocol
    assert "canonical" not in context["arguments"]
    assert TOKEN not in json.dumps(event) + json.dumps(slack)
