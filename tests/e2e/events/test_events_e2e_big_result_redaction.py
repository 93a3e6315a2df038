"""A credential inside a large tool result (256 KiB of padding around it) reaches no sink: the
bus, the SSE stream, the signed webhook and the audit log all hold it masked, in both eras, while
the caller gets the result unchanged. The credential scan skips patterns whose characters a text
lacks; this is the end-to-end check that the skipping never lets one through. The masked
``tool.result`` is on the bus before the caller has its result: redaction stays on the call's
path, ahead of the response, not deferred to the sinks."""

from __future__ import annotations

import secrets
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
from events_e2e_support import (
    SUBSCRIBER_TOKEN,
    BusReader,
    Served,
    api,
    audit_bytes,
    audit_db,
    e2e_config,
    envelope,
    http_client,
    served,
    webhook_receiver,
)

from gateway.audit.log import read_tail
from gateway.events.redact import MASK

PADDING = "x" * (128 * 1024)
KEYS = {
    "openai": "sk-proj-" + secrets.token_hex(20),
    "github": "ghp_" + secrets.token_hex(20),
    "slack": "xoxb-" + secrets.token_hex(12),
    "aws": "AKIA" + secrets.token_hex(8).upper(),
}
TEXT = PADDING + " ".join(KEYS.values()) + PADDING
MASKED = PADDING + " ".join(MASK for _ in KEYS) + PADDING


def leaks(blob: bytes | str) -> list[str]:
    raw = blob.encode() if isinstance(blob, str) else blob
    return [name for name, key in KEYS.items() if key.encode() in raw]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_credentials_in_a_256_kib_result_reach_no_sink(tmp_path: Path, mode: str) -> None:
    assert leaks(TEXT) == list(KEYS)  # the detector itself works
    async with webhook_receiver() as (hooks, hook):
        config = e2e_config(tmp_path, webhook=hook)
        with anyio.fail_after(60):
            async with (
                served(config) as rig,
                rig.gateway.events.subscribe(["tool.result"]) as sub,
                api(rig.base, SUBSCRIBER_TOKEN) as http,
                http.stream("GET", "/api/events", params={"types": "tool.result"}) as stream,
                http_client(rig.mcp_url, mode) as client,
            ):
                stored = await client.call_tool(
                    "vault__store", {"text": TEXT, "secret": "s", "pin": "p"}
                )
                bus = await BusReader(sub).until_result()
                async for message in httpx2.EventSource(stream):
                    if message.event == "tool.result":
                        sse = message
                        break
                await hooks.until(lambda e: e["type"] == "tool.result")
    assert isinstance(stored.content[0], types.TextContent)
    assert stored.content[0].text == TEXT  # the caller gets the real answer

    assert envelope(bus)["data"]["response"]["content"][0]["text"] == MASKED
    assert leaks(bus.json_bytes) == []
    assert sse.json()["data"]["response"]["content"][0]["text"] == MASKED
    assert leaks(sse.data) == []
    hooked = [e for e in hooks.envelopes if e["type"] == "tool.result"]
    assert [e["data"]["response"]["content"][0]["text"] for e in hooked] == [MASKED]
    assert leaks(b"".join(d.body for d in hooks.deliveries)) == []
    audited = [e.body for e in read_tail(audit_db(config), 10) if e.body["type"] == "tool.result"]
    assert [e["data"]["response"]["content"][0]["text"] for e in audited] == [MASKED]
    assert leaks(audit_bytes(config)) == []


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_masked_tool_result_is_published_before_the_caller_has_the_result(
    rig: Served, mode: str
) -> None:
    async with (
        rig.gateway.events.subscribe(["tool.result"], name=f"order-{mode}") as sub,
        http_client(rig.mcp_url, mode) as client,
    ):
        with anyio.fail_after(30):
            stored = await client.call_tool(
                "vault__store", {"text": TEXT, "secret": "s", "pin": "p"}
            )
        published = sub.ready(10)  # without waiting: already delivered, or the test fails
    assert isinstance(stored.content[0], types.TextContent)
    assert stored.content[0].text == TEXT
    assert [e.data["response"]["content"][0]["text"] for e in published] == [MASKED]
