"""Where labels live and show: they survive a restart (SQLite), follow a session across two
replicas (PostgreSQL), ride on the tool.call/tool.result events and the audit log, and a
server's config can distrust its annotations.

Real parts: the dataflow upstream over stdio, gateways in-process (each replica its own
`Gateway`, on one PostgreSQL schema of the local server), the audit log in SQLite.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
from dataflow_support import FETCH, READ, SEND, TRIFECTA_POLICY, agent, dataflow_config, sent
from pg_support import fresh_schema, pg_storage

from gateway.audit.log import read_entries
from gateway.gateway import Gateway
from toolsets.result import ToolResult

HELD_REASON = (
    "private data may leave after untrusted content (session labels: private via "
    "web__read_file and untrusted via web__fetch_page)"
)
URL = {"url": "https://x.example"}
SECRETS = {"path": "secrets.txt"}
MESSAGE = {"to": "a@example.com", "body": "x"}


async def _reason(gateway: Gateway, result: ToolResult) -> str:
    pending = (result.meta or {}).get("lockgate/pending")
    assert result.is_error
    assert pending, result
    call = await gateway.store.get(pending["id"])
    assert call is not None
    return call.reason


async def test_labels_survive_a_gateway_restart(tmp_path: Path) -> None:
    config = dataflow_config(tmp_path, store="sqlite")
    async with Gateway.from_config(config) as gateway:
        await gateway.call_tool(FETCH, URL, agent("kept"))
        await gateway.call_tool(READ, SECRETS, agent("kept"))
    async with Gateway.from_config(config) as gateway:
        held = await gateway.call_tool(SEND, MESSAGE, agent("kept"))
        assert await _reason(gateway, held) == HELD_REASON
    assert sent(tmp_path) == ""


async def test_labels_follow_a_session_across_two_replicas_on_postgresql(tmp_path: Path) -> None:
    with anyio.fail_after(90):
        async with fresh_schema() as schema, contextlib.AsyncExitStack() as stack:
            config = dataflow_config(tmp_path, storage=pg_storage(schema))
            a = await stack.enter_async_context(Gateway.from_config(config))
            b = await stack.enter_async_context(Gateway.from_config(config))
            assert not (await a.call_tool(FETCH, URL, agent("roaming"))).is_error
            assert not (await b.call_tool(READ, SECRETS, agent("roaming"))).is_error
            held = await a.call_tool(SEND, MESSAGE, agent("roaming"))
            reason = await _reason(a, held)
            alone = await b.call_tool(SEND, MESSAGE, agent("elsewhere"))
    assert reason == HELD_REASON
    assert not alone.is_error


async def test_call_events_and_the_audit_log_carry_the_labels(tmp_path: Path) -> None:
    audit = tmp_path / "audit.db"
    config = dataflow_config(tmp_path, events={"audit": {"path": str(audit)}})
    async with Gateway.from_config(config) as gateway:
        await gateway.call_tool(FETCH, URL, agent("s"))
        await gateway.call_tool(READ, SECRETS, agent("s"))
    entries = [e.body["data"] for e in read_entries(audit, ("tool.call", "tool.result"))]
    labels = [(d["tool"], d["decision"].get("labels")) for d in entries]
    fetched = {"tool": ["untrusted"], "adds": ["untrusted"], "session": []}
    read = {"tool": ["private"], "adds": ["private"], "session": ["untrusted"]}
    assert labels == [(FETCH, fetched), (FETCH, fetched), (READ, read), (READ, read)]


async def test_a_server_whose_annotations_are_not_trusted_derives_no_labels(
    tmp_path: Path,
) -> None:
    server = {"labels": {"annotations": False, "sinks": ["egress"]}}
    async with Gateway.from_config(dataflow_config(tmp_path, server=server)) as gateway:
        ctx = agent("s")
        await gateway.call_tool(FETCH, URL, ctx)  # open-world by its hints: not trusted here
        await gateway.call_tool(READ, SECRETS, ctx)
        result = await gateway.call_tool(SEND, MESSAGE, ctx)
    assert not result.is_error, result
    assert sent(tmp_path) == "a@example.com: x\n"


async def test_a_server_can_label_every_tool_it_serves(tmp_path: Path) -> None:
    server = {"labels": {"sources": ["untrusted"]}}
    async with Gateway.from_config(dataflow_config(tmp_path, server=server)) as gateway:
        ctx = agent("s")
        await gateway.call_tool(READ, SECRETS, ctx)  # untrusted by the server, private by rule
        held = await gateway.call_tool(SEND, MESSAGE, ctx)
        assert await _reason(gateway, held) == (
            "private data may leave after untrusted content (session labels: private via "
            "web__read_file and untrusted via web__read_file)"
        )


SHADOW_POLICY = TRIFECTA_POLICY.replace(
    "    effect: ask\n", "    effect: ask\n    mode: shadow\n", 1
)


async def test_a_shadow_label_rule_records_what_it_would_hold_and_lets_the_call_run(
    tmp_path: Path,
) -> None:
    audit = tmp_path / "audit.db"
    config = dataflow_config(tmp_path, SHADOW_POLICY, events={"audit": {"path": str(audit)}})
    async with Gateway.from_config(config) as gateway:
        ctx = agent("s")
        await gateway.call_tool(FETCH, URL, ctx)
        await gateway.call_tool(READ, SECRETS, ctx)
        result = await gateway.call_tool(SEND, MESSAGE, ctx)
    assert not result.is_error
    assert sent(tmp_path) == "a@example.com: x\n"
    calls = [e.body["data"] for e in read_entries(audit, ("tool.call",))]
    shadows = [(d["tool"], d["decision"].get("shadow")) for d in calls]
    assert shadows[:2] == [(FETCH, None), (READ, None)]
    assert shadows[2][0] == SEND
    [would] = shadows[2][1]
    assert (would["rule_id"], would["effect"]) == ("no-exfiltration", "ask")
