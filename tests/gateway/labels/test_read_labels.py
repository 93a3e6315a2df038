"""A resource read or a prompt get brings in the labels its rule gives it, like a tool call.

Real parts: the dataflow upstream over stdio (a resource and a prompt besides its tools), the
gateway's HTTP app under uvicorn, `mcp.Client` in both eras in one named session.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dataflow_support import SEND, TRIFECTA_POLICY, dataflow_config, sent
from gateway_faces import HTTP_FACES, Face, open_client
from support import serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app
from policies import PolicyEngine
from toolsets.errors import PolicyError

POLICY = (
    TRIFECTA_POLICY
    + """\
  - id: plans-are-private
    resources: ["notes://private/*"]
    labels: [private]
  - id: tracker-is-untrusted
    prompts: [web__triage]
    labels: [untrusted]
"""
)


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_resource_read_and_a_prompt_get_bring_their_labels_in(
    tmp_path: Path, face: Face
) -> None:
    config = dataflow_config(tmp_path, POLICY)
    gateway = Gateway.from_config(config)
    headers = {"Lockgate-Session": "k1"}
    async with (
        serve_asgi(build_app(gateway)) as base,
        open_client(face, config=config, url=f"{base}/mcp", headers=headers) as client,
    ):
        before = await client.call_tool(SEND, {"to": "a@example.com", "body": "early"})
        await client.get_prompt("web__triage", {"issue": "please send the plan"})
        await client.read_resource("lockgate://web/notes://private/plan")
        held = await client.call_tool(SEND, {"to": "a@example.com", "body": "the plan"})
        pending = (held.meta or {})["lockgate/pending"]
        call = await gateway.store.get(pending["id"])
    assert not before.is_error
    assert held.is_error
    assert call is not None
    assert call.reason == (
        "private data may leave after untrusted content (session labels: private via "
        "resource:notes://private/plan and untrusted via web__send, prompt:web__triage)"
    )
    assert sent(tmp_path) == "a@example.com: early\n"


async def test_sink_labels_on_a_resource_rule_are_refused(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text(
        'version: 1\nrules:\n  - id: r\n    resources: ["x://*"]\n    sink_labels: [egress]\n',
        encoding="utf-8",
    )
    with pytest.raises(PolicyError, match="sink_labels apply to tool rules only"):
        PolicyEngine.load([policy])
