"""Call events of real traffic: ``tool.call`` then ``tool.result`` for a call, ``tool.denied``
alone for a refused one, on both faces (HTTP in this process, ``lockgate stdio`` as a subprocess)
and in both MCP eras. A denial is on disk before the caller reads it; a call the client
cancels still gets its ``tool.result``.

Over HTTP the events are read from the served gateway's bus; over stdio the gateway is a
subprocess and they are what its signed webhook delivered. Either way the audit log is read
from disk after the gateway stopped, and its chain must verify.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from events_e2e_support import (
    AGENT,
    ALLOWED,
    DENIED_TOOL,
    DENY_MESSAGE,
    ECHO,
    WEBHOOK_SECRET,
    BusReader,
    Served,
    audit_db,
    http_client,
    observed,
    verify_standard_webhook,
)
from support import MODES

from gateway.audit.log import read_tail
from gateway.audit.verify import verify

FACES = [
    pytest.param(transport, mode, id=f"{transport}-{'legacy' if mode == 'legacy' else 'modern'}")
    for transport in ("http", "stdio")
    for mode in MODES
]
CALL_IDENTITY = ("call_id", "tool", "server", "upstream_tool", "principal", "session_id")


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def audited(config: Path) -> list[dict[str, Any]]:
    """The audit log's entries as ``{"kind", "event_id", "body"}``, after checking its chain."""
    report = verify(audit_db(config))
    assert report.ok, report.problem
    return [
        {"kind": e.kind, "event_id": e.event_id, "body": e.body}
        for e in read_tail(audit_db(config), 100)
    ]


@pytest.mark.parametrize(("transport", "mode"), FACES)
async def test_one_call_publishes_tool_call_then_tool_result_with_the_same_identity(
    tmp_path: Path, transport: str, mode: str
) -> None:
    with anyio.fail_after(30):
        async with observed(transport, mode, tmp_path) as run:
            result = await run.client.call_tool(ECHO, {"text": "hello events"})
            await run.results(1)
            events = run.events
    assert not result.is_error
    assert text_of(result) == "hello events"

    assert [e["type"] for e in events] == ["tool.call", "tool.result"]
    call, answer = (e["data"] for e in events)
    assert {k: call[k] for k in CALL_IDENTITY} == {k: answer[k] for k in CALL_IDENTITY}
    assert call["decision"] == answer["decision"] == ALLOWED
    assert call["call_id"]
    if (transport, mode) == ("http", "legacy"):
        assert call["session_id"]  # the MCP session id; stdio and 2026-07-28 have none (null)
    assert (call["tool"], call["server"], call["upstream_tool"]) == (ECHO, "vault", "echo")
    assert call["principal"] == AGENT
    assert call["args"] == {"text": "hello events"}
    assert answer["is_error"] is False
    assert answer["response"]["content"] == [{"type": "text", "text": "hello events"}]
    assert all(e["specversion"] == "1.0" and e["source"] == "lockgate" for e in events)
    assert events[0]["id"] < events[1]["id"]  # ULIDs: ordered by creation
    if run.receiver is not None:
        deliveries = run.receiver.deliveries
        assert run.receiver.rejected == 0
        assert [d.headers["webhook-id"] for d in deliveries] == [e["id"] for e in events]
        # The receiver's check is not vacuous: a changed body or another secret fails it.
        headers, body = deliveries[0].headers, deliveries[0].body
        assert not verify_standard_webhook(WEBHOOK_SECRET, headers, body + b" ")
        assert not verify_standard_webhook("whsec_" + "A" * 44, headers, body)

    # The same two events, the same envelopes, are on record in the audit log.
    entries = audited(run.config)
    assert [(e["kind"], e["event_id"]) for e in entries] == [(e["type"], e["id"]) for e in events]
    assert [e["body"] for e in entries] == events


@pytest.mark.parametrize(("transport", "mode"), FACES)
async def test_a_denied_call_publishes_tool_denied_and_no_tool_call(
    tmp_path: Path, transport: str, mode: str
) -> None:
    with anyio.fail_after(30):
        async with observed(transport, mode, tmp_path) as run:
            refused = await run.client.call_tool(DENIED_TOOL, {"path": "/vault/a"})
            # Written before the answer was sent: on disk while the gateway still runs.
            on_record = read_tail(audit_db(run.config), 10)
            # A later call is the barrier: events arrive in publish order, so once its result
            # is seen, everything the refused call published has been seen too.
            await run.client.call_tool(ECHO, {"text": "after"})
            await run.results(1)
            events = run.events
    assert refused.is_error
    assert text_of(refused) == DENY_MESSAGE

    assert [(e["type"], e["data"]["tool"]) for e in events] == [
        ("tool.denied", DENIED_TOOL),
        ("tool.call", ECHO),
        ("tool.result", ECHO),
    ]
    denied = events[0]["data"]
    assert denied["decision"] == {"effect": "deny", "rule_id": "no-erase"}
    assert denied["message"] == DENY_MESSAGE
    assert denied["principal"] == AGENT
    assert denied["server"] == "vault"
    assert denied["args"] == {"path": "/vault/a"}
    assert denied["call_id"] not in {e["data"]["call_id"] for e in events[1:]}

    assert [(e.kind, e.event_id) for e in on_record] == [("tool.denied", events[0]["id"])]
    entries = audited(run.config)
    assert [(e["kind"], e["event_id"]) for e in entries] == [(e["type"], e["id"]) for e in events]
    assert entries[0]["body"]["data"] == events[0]["data"]


async def test_a_call_the_client_cancels_still_publishes_its_tool_result(rig: Served) -> None:
    started = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        started.set()

    async with (
        rig.gateway.events.subscribe(["tool.*"], name="cancelled") as sub,
        http_client(rig.mcp_url, "legacy") as client,
    ):
        reader = BusReader(sub)
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:

                async def slow_call() -> None:
                    await client.call_tool(
                        "vault__slow", {"steps": 1000}, progress_callback=on_progress
                    )

                tg.start_soon(slow_call)
                await started.wait()
                tg.cancel_scope.cancel()
            # The upstream saw the cancellation, so the gateway's call has unwound; the echo
            # call after it is the barrier for everything published before.
            seen = await client.call_tool("vault__wait_cancelled", {"timeout": 10})
            await client.call_tool(ECHO, {"text": "barrier"})
            await reader.until(lambda e: e.type == "tool.result" and e.data["tool"] == ECHO)
    assert seen.structured_content == {"result": True}
    call = next(e for e in reader.events if e.data["tool"] == "vault__slow")
    assert call.type == "tool.call"
    outcome = [
        e
        for e in reader.events
        if e.type == "tool.result" and e.data["call_id"] == call.data["call_id"]
    ]
    assert len(outcome) == 1
    assert outcome[0].data["is_error"] is True
