"""`EventsToolset` publishes a call/result pair per call; redaction covers paths and credentials."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import anyio
import pytest
from support import call as call_tool

from gateway.events import MASK, BusObserver, EventBus, redact
from gateway.events.tool_events import tools_changed
from toolsets import CallContext, ExternalToolset, Principal, ToolDef, ToolResult, sha256_hex
from toolsets.decision import Decision
from toolsets.events import EventsToolset

ECHO = ToolDef(name="files__echo", server="files", upstream_name="echo")
BOOM = ToolDef(name="files__boom", server="files", upstream_name="boom")


async def executor(tool: ToolDef, args: Mapping[str, Any], ctx: CallContext) -> ToolResult:
    if tool is BOOM:
        raise RuntimeError("upstream went away")
    return ToolResult.text(f"echo {args['text']} with Bearer abcdefghijklmnop")


DECIDED = Decision(effect="allow", rule_id="read-only-files", reason="matched")


def events_toolset(bus: EventBus) -> EventsToolset:
    return EventsToolset(ExternalToolset([ECHO, BOOM], executor), BusObserver(bus))


async def test_call_then_result_share_the_call_id_and_carry_the_decision() -> None:
    bus = EventBus("gw")
    ctx = CallContext(principal=Principal(id="agent:ci"), session_id="s1", decision=DECIDED)
    async with bus.subscribe(["tool.*"]) as sub, events_toolset(bus) as toolset:
        result = await call_tool(toolset, "files__echo", {"text": "hi"}, ctx)
        call, done = await anext(sub), await anext(sub)
    assert result.first_text().startswith("echo hi")
    assert (call.type, done.type) == ("tool.call", "tool.result")
    assert call.data["call_id"] == done.data["call_id"] == ctx.call_id
    assert dict(call.data) | {"args_sha256": "-"} == {
        "call_id": ctx.call_id,
        "tool": "files__echo",
        "server": "files",
        "upstream_tool": "echo",
        "principal": "agent:ci",
        "session_id": "s1",
        "args": {"text": "hi"},
        "args_sha256": "-",
        "decision": {"effect": "allow", "rule_id": "read-only-files"},
    }
    assert done.data["is_error"] is False
    assert done.data["duration_ms"] >= 0
    assert done.data["response"] == {
        "content": [{"type": "text", "text": f"echo hi with Bearer {MASK}"}],
        "structuredContent": None,
    }


async def test_policy_paths_and_credentials_are_masked_but_the_hash_covers_the_real_args() -> None:
    bus = EventBus("gw")
    args = {"text": "hi", "token": "t0ps3cret", "note": "key sk-proj-abcdefghijklmnopqrstuvwx"}
    async with bus.subscribe(["tool.call"]) as sub:
        ctx = CallContext(decision=replace(DECIDED, redact=("args.token",)))
        await call_tool(events_toolset(bus), "files__echo", args, ctx)
        call = await anext(sub)
    assert call.data["args"] == {"text": "hi", "token": MASK, "note": f"key {MASK}"}
    assert b"t0ps3cret" not in call.json_bytes
    assert b"sk-proj" not in call.json_bytes
    assert call.data["args_sha256"] == sha256_hex(args)


async def test_a_raising_tool_still_gets_an_error_result_event() -> None:
    bus = EventBus("gw")
    async with bus.subscribe() as sub:
        with pytest.raises(RuntimeError):
            await call_tool(events_toolset(bus), "files__boom", {}, CallContext())
        with anyio.fail_after(30):
            call, done = await anext(sub), await anext(sub)
    assert call.type == "tool.call"
    assert done.data["is_error"] is True
    assert "upstream went away" in done.data["response"]["content"][0]["text"]


@pytest.mark.parametrize(
    ("value", "paths", "expected"),
    [
        pytest.param({"token": "x"}, ["args.token"], {"token": MASK}, id="top-level"),
        pytest.param(
            {"headers": {"X-Api": "v", "Accept": "a"}},
            ["args.headers.x-api"],
            {"headers": {"X-Api": MASK, "Accept": "a"}},
            id="nested-case-insensitive",
        ),
        pytest.param(
            {"items": [{"s": 1, "k": 2}, {"s": 3}]},
            ["args.items.*.s"],
            {"items": [{"s": MASK, "k": 2}, {"s": MASK}]},
            id="wildcard-in-list",
        ),
        pytest.param({"a": [1, 2]}, ["args.a.1"], {"a": [1, MASK]}, id="list-index"),
        pytest.param({"token": "x"}, ["result.token"], {"token": "x"}, id="other-root-ignored"),
        pytest.param(
            {"cfg": {"Password": "p", "client_secret": "c"}},
            [],
            {"cfg": {"Password": MASK, "client_secret": MASK}},
            id="sensitive-keys-anywhere",
        ),
    ],
)
def test_redact_masks_addressed_paths(value: Any, paths: list[str], expected: Any) -> None:
    assert redact(value, paths) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "Authorization: Bearer abc.def-ghi_jkl", f"Authorization: Bearer {MASK}", id="bearer"
        ),
        pytest.param("key=sk-abcdefghijklmnopqrstuvwxyz", f"key={MASK}", id="openai"),
        pytest.param("sk-ant-api03-abcdefghijklmnopqrstu", MASK, id="anthropic"),
        pytest.param("ghp_abcdefghijklmnopqrstuvwxyz0123456789", MASK, id="github"),
        pytest.param("id AKIAIOSFODNN7EXAMPLE end", f"id {MASK} end", id="aws"),
        pytest.param(
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----\nok",
            f"{MASK}\nok",
            id="pem",
        ),
        pytest.param(
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0",
            MASK,
            id="jwt",
        ),
        pytest.param(
            "just a normal sentence about skies", "just a normal sentence about skies", id="plain"
        ),
    ],
)
def test_credential_looking_values_are_masked_anywhere(text: str, expected: str) -> None:
    assert redact({"deep": [{"x": text}]}) == {"deep": [{"x": expected}]}


def test_redact_returns_new_structures() -> None:
    args = {"token": "x", "nested": {"password": "p"}}
    redact(args, ["args.token"])
    assert args == {"token": "x", "nested": {"password": "p"}}


def test_tools_changed_lists_added_removed_and_changed_pins() -> None:
    changed = tools_changed({"a": "1", "b": "2", "c": "3"}, {"b": "2", "c": "9", "d": "4"})
    assert changed is not None
    assert changed.data == {
        "server": None,
        "added": [{"name": "d", "pin": "4"}],
        "removed": [{"name": "a", "pin": "1"}],
        "changed": [{"name": "c", "old_pin": "3", "pin": "9"}],
    }
    assert tools_changed({"a": "1"}, {"a": "1"}) is None
