"""An inspector in ``mode: shadow`` records what it would do and does nothing: its findings go on
the events and the audit log (``shadow: true``, the action it would take), while the call runs
with its arguments untouched; over HTTP in both MCP eras, against the recording upstream."""

from __future__ import annotations

from pathlib import Path

import pytest
from gateway_faces import HTTP_FACES, Face, text_of
from inspector_support import gateway_client, of_type, received, recorder_config

from gateway.audit.log import read_entries

pytestmark = pytest.mark.parametrize("face", HTTP_FACES)

PII = {
    "type": "builtin",
    "detectors": ["email"],
    "direction": "arguments",
    "tools": ["rec__record"],
    "actions": {"email": "deny"},
}


async def test_a_shadow_inspector_records_the_deny_it_would_give_and_the_call_runs(
    tmp_path: Path, face: Face
) -> None:
    audit = {"audit": {"path": str(tmp_path / "audit.db")}}
    config, log = recorder_config(tmp_path, {"pii": PII | {"mode": "shadow"}}, events=audit)
    async with gateway_client(config, face) as (client, _gateway, events):
        result = await client.call_tool("rec__record", {"value": "mail bob@example.com"})

    assert not result.is_error
    assert text_of(result) == "recorded mail bob@example.com"
    assert [entry["arguments"]["value"] for entry in received(log)] == ["mail bob@example.com"]
    assert of_type(events, "tool.denied") == []
    (called,) = of_type(events, "tool.call")
    (finding,) = called["decision"]["findings"]
    assert (finding["kind"], finding["action"], finding["shadow"]) == ("email", "deny", True)
    assert called["decision"]["effect"] == "allow"
    (recorded,) = [e.body for e in read_entries(tmp_path / "audit.db", ["tool.call"])]
    assert recorded["data"]["decision"]["findings"][0]["shadow"] is True


async def test_the_same_inspector_enforcing_refuses_the_call(tmp_path: Path, face: Face) -> None:
    config, log = recorder_config(tmp_path, {"pii": PII})
    async with gateway_client(config, face) as (client, _gateway, _events):
        result = await client.call_tool("rec__record", {"value": "mail bob@example.com"})

    assert result.is_error  # the control: without shadow, the same finding denies
    assert received(log) == []
