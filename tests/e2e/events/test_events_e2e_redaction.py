"""Redaction reaches every sink: the in-process bus, the SSE stream, the signed webhook and the
audit log (its rows and its file bytes) never hold a secret the call carried.

Each secret exercises one mechanism: ``secret`` and ``pin`` are named by the policy rule's
``redact`` paths (``pin`` is not a sensitive key, so only the policy masks it); an ``sk-proj-``
key and a bearer token inside free text are masked because they look like credentials, in the
arguments and in the tool's answer (the vault echoes the text back). A value only the policy
knows is secret must not come back through the tool's answer either.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from events_e2e_support import (
    DENIED_TOOL,
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
from gateway.audit.verify import verify
from gateway.events.redact import MASK

API_KEY = "sk-proj-" + secrets.token_hex(20)
BEARER_CREDENTIAL = f"abc.{secrets.token_hex(4)}.ghi"
SECRET = f"correct-horse-{secrets.token_hex(6)}"
PIN = f"pin-{secrets.token_hex(5)}"
NEEDLES = (API_KEY, BEARER_CREDENTIAL, SECRET, PIN)

TEXT = f"deploy with {API_KEY} and header Bearer {BEARER_CREDENTIAL}"
MASKED_TEXT = f"deploy with {MASK} and header Bearer {MASK}"
STORE_ARGS = {"text": TEXT, "secret": SECRET, "pin": PIN}
MASKED_ARGS = {"text": MASKED_TEXT, "secret": MASK, "pin": MASK}
ERASE_ARGS = {"path": f"/keys/{API_KEY}"}
MASKED_ERASE_ARGS = {"path": f"/keys/{MASK}"}


def leaks(blob: bytes | str) -> list[str]:
    raw = blob.encode() if isinstance(blob, str) else blob
    return [needle for needle in NEEDLES if needle.encode() in raw]


def check_envelopes(envelopes: list[dict[str, Any]], where: str) -> None:
    """The three events of the suite's traffic, each with only masked values."""
    kinds = [(e["type"], e["data"]["tool"]) for e in envelopes]
    assert kinds == [
        ("tool.call", "vault__store"),
        ("tool.result", "vault__store"),
        ("tool.denied", DENIED_TOOL),
    ], where
    call, answer, denied = (e["data"] for e in envelopes)
    assert call["args"] == MASKED_ARGS, where
    assert answer["response"]["content"] == [{"type": "text", "text": MASKED_TEXT}], where
    assert denied["args"] == MASKED_ERASE_ARGS, where


async def test_secrets_are_masked_on_the_bus_sse_webhook_and_audit_log(tmp_path: Path) -> None:
    assert leaks(f"{TEXT} {SECRET} {PIN}") == list(NEEDLES)  # the detector itself works
    async with webhook_receiver() as (hooks, hook):
        config = e2e_config(tmp_path, webhook=hook)
        with anyio.fail_after(30):
            async with (
                served(config) as rig,
                rig.gateway.events.subscribe(["tool.*"]) as sub,
                api(rig.base, SUBSCRIBER_TOKEN) as http,
                http.stream("GET", "/api/events", params={"types": "tool.*"}) as stream,
                http_client(rig.mcp_url, "auto") as client,
            ):
                stored = await client.call_tool("vault__store", STORE_ARGS)
                refused = await client.call_tool(DENIED_TOOL, ERASE_ARGS)
                bus = BusReader(sub)
                await bus.until(lambda e: e.type == "tool.denied")
                sse: list[httpx2.ServerSentEvent] = []
                async for message in httpx2.EventSource(stream):
                    if message.data:
                        sse.append(message)
                    if message.event == "tool.denied":
                        break
                await hooks.until(lambda e: e["type"] == "tool.denied")
    # The caller gets the tool's real answer; only what the gateway publishes is masked.
    assert isinstance(stored.content[0], types.TextContent)
    assert stored.content[0].text == TEXT
    assert refused.is_error

    check_envelopes([envelope(e) for e in bus.events], "bus")
    assert leaks(b"".join(e.json_bytes for e in bus.events)) == []

    check_envelopes([m.json() for m in sse], "sse")
    assert leaks("".join(m.data for m in sse)) == []

    assert hooks.rejected == 0
    check_envelopes(hooks.envelopes, "webhook")
    assert leaks(b"".join(d.body for d in hooks.deliveries)) == []

    assert verify(audit_db(config)).ok
    check_envelopes([e.body for e in read_tail(audit_db(config), 10)], "audit")
    assert leaks(audit_bytes(config)) == []


async def test_a_value_the_policy_redacts_is_masked_where_the_tool_repeats_it(
    rig: Served,
) -> None:
    value = f"s3cr3t-{secrets.token_hex(6)}"  # not credential-looking: only the policy knows
    async with (
        rig.gateway.events.subscribe(["tool.*"], name="put") as sub,
        http_client(rig.mcp_url, "auto") as client,
    ):
        with anyio.fail_after(20):
            answer = await client.call_tool("vault__put", {"key": "db", "value": value})
            bus = BusReader(sub)
            await bus.until_result()
    assert isinstance(answer.content[0], types.TextContent)
    assert answer.content[0].text == f"stored db={value}"  # the caller gets the real answer
    call, result = bus.events
    assert call.data["args"] == {"key": "db", "value": MASK}
    assert value.encode() not in result.json_bytes
    assert result.data["response"]["content"][0]["text"] == f"stored db={MASK}"
