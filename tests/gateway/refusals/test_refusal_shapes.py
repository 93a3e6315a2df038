"""Every refusal the model reads has one shape, in both MCP eras, through the official MCP Python
SDK client over HTTP: the human sentence first, ``isError``, and ``_meta["lockgate/refusal"]``
with its kind, rule, retry-after and what would unblock it. An upstream failure carries
``lockgate/error`` instead, and an unknown (or hidden) tool is a JSON-RPC error: neither reads as
a policy refusal."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from gateway_faces import FACES, Face, open_face
from mcp import Client
from mcp.shared.exceptions import MCPError
from refusal_support import Served, connect
from support import MODES

from toolsets.context import Principal

both_eras = pytest.mark.parametrize("mode", MODES)
OPS = Principal(id="user:ops", roles=frozenset({"ops"}))
CLOSED = "This recorder is closed; do not retry."


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


def refusal(result: Any) -> dict[str, Any]:
    """The ``lockgate/refusal`` of an error result, checked for the common shape."""
    assert result.is_error
    found: dict[str, Any] = (result.meta or {})["lockgate/refusal"]
    assert texts(result) == [found["message"]]  # the sentence first, and alone
    assert "lockgate/error" not in (result.meta or {})
    return found


def value() -> dict[str, str]:
    return {"value": uuid.uuid4().hex}


@both_eras
async def test_a_policy_denial_is_the_rules_sentence_then_a_denied_refusal(
    served: Served, mode: str
) -> None:
    async with connect(served, mode) as client:
        result = await client.call_tool("recorder__record_denied", value())

    assert texts(result) == [CLOSED]
    assert refusal(result) == {
        "kind": "denied",
        "message": CLOSED,
        "rule": "recorder-closed",
        "retryAfter": None,
        "unblock": {"action": "ask_approver"},
    }
    assert result.structured_content == {"lockgate/refusal": refusal(result)}  # no outputSchema
    assert result.meta["lockgate/decision"]["rule_id"] == "recorder-closed"


@pytest.mark.parametrize("face", FACES)
async def test_a_policy_denial_has_the_same_shape_on_every_face_and_era(
    served: Served, face: Face
) -> None:
    async with open_face(face, served.config) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("recorder__record_denied", value())

    found = refusal(result)
    assert (found["kind"], found["rule"], found["message"]) == ("denied", "recorder-closed", CLOSED)
    assert result.structured_content == {"lockgate/refusal": found}


@both_eras
async def test_a_tool_with_an_output_schema_carries_the_refusal_in_meta_only(
    served: Served, mode: str
) -> None:
    async with connect(served, mode) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool("echo__echo", {"text": "hello"})

    assert listed["echo__echo"].output_schema is not None
    assert refusal(result)["kind"] == "denied"
    assert result.structured_content is None


@both_eras
async def test_a_locked_session_gate_names_the_tool_that_unlocks_it(
    served: Served, mode: str
) -> None:
    async with (
        connect(served, mode) as client,
        served.gateway.events.subscribe(["tool.denied"]) as denials,
    ):
        locked = await client.call_tool("recorder__record_caller", value())
        with anyio.fail_after(30):
            on_record = await anext(aiter(denials))
        first = await client.call_tool("recorder__record_free", value())
        unlocked = await client.call_tool("recorder__record_caller", value())

    message = (
        "Call recorder__record_free first: it must succeed in this session before other tools "
        "can be used."
    )
    assert refusal(locked) == {
        "kind": "session_locked",
        "message": message,
        "rule": "free-first",
        "retryAfter": None,
        "unblock": {"action": "call_first", "tool": "recorder__record_free"},
    }
    assert (on_record.data["tool"], on_record.data["refusal"]) == (
        "recorder__record_caller",
        "session_locked",
    )
    assert not first.is_error
    assert not unlocked.is_error


@both_eras
async def test_a_rate_limited_call_says_when_to_retry(served: Served, mode: str) -> None:
    async with connect(served, mode) as client:
        first = await client.call_tool("recorder__record_brief", value())
        limited = await client.call_tool("recorder__record_brief", value())

    found = refusal(limited)
    assert not first.is_error
    assert (found["kind"], found["rule"], found["retryAfter"]) == (
        "rate_limited",
        "brief-once-per-session",
        3600,
    )
    assert found["unblock"] == {"action": "retry_after"}
    assert found["details"]["limit"]["rate"] == "1/h"
    assert limited.meta["lockgate/retry_after"] == 3600  # the older keys stay


async def _while_held(
    served: Served, client: Client, tool: str, act: Callable[[str], Awaitable[object]]
) -> Any:
    """Call ``tool``; once it is held, ``act`` on its approval id; the call's result."""
    result: Any = None

    async def call() -> None:
        nonlocal result
        result = await client.call_tool(tool, value())

    async with served.gateway.events.subscribe(["tool.approval.requested"]) as requested:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                event = await anext(aiter(requested))
                await act(event.data["approval_id"])
    return result


@both_eras
async def test_an_approvers_denial_is_their_sentence_and_names_the_approval(
    served: Served, mode: str
) -> None:
    async def deny(id: str) -> object:
        return await served.gateway.approvals.decide(
            id, "deny", by=OPS, channel="api", message="Not today: ask again on Monday."
        )

    async with connect(served, mode) as client:
        result = await _while_held(served, client, "recorder__record", deny)

    found = refusal(result)
    assert texts(result) == ["Not today: ask again on Monday."]
    assert (found["kind"], found["rule"], found["unblock"]) == (
        "approval_denied",
        "held-for-ops",
        {"action": "none"},
    )
    assert found["approvalId"] == result.meta["lockgate/pending"]["id"]


@both_eras
async def test_a_withdrawn_approval_is_a_cancelled_refusal(served: Served, mode: str) -> None:
    async def withdraw(id: str) -> object:
        return await served.gateway.approvals.outcomes.cancel(id, by="user:ops", channel="api")

    async with connect(served, mode) as client:
        result = await _while_held(served, client, "recorder__record", withdraw)

    found = refusal(result)
    assert (found["kind"], found["unblock"]) == ("approval_cancelled", {"action": "reissue"})
    assert texts(result) == [f"Call {found['approvalId']} was cancelled; not executed."]


@both_eras
async def test_an_expired_approval_is_an_expired_refusal(served: Served, mode: str) -> None:
    async with connect(served, mode) as client:
        with anyio.fail_after(30):
            result = await client.call_tool("recorder__record_expiring", value())

    found = refusal(result)
    assert (found["kind"], found["rule"], found["unblock"]) == (
        "approval_expired",
        "expires-quickly",
        {"action": "reissue"},
    )
    assert texts(result) == [
        f"Approval {found['approvalId']} expired without a decision; not executed."
    ]


@both_eras
async def test_a_held_call_answered_pending_is_not_a_refusal(served: Served, mode: str) -> None:
    async with connect(served, mode) as client:
        result = await client.call_tool("recorder__record_lapse", value())

    assert result.is_error
    assert result.meta["lockgate/pending"]["state"] == "pending"
    assert "lockgate/refusal" not in result.meta


@both_eras
async def test_an_upstream_failure_is_an_error_not_a_refusal(served: Served, mode: str) -> None:
    async with connect(served, mode) as client:
        with anyio.fail_after(30):
            result = await client.call_tool("faulty__crash", {})

    assert result.is_error
    assert texts(result)[0].startswith("Server 'faulty'")  # lost, or restarting
    assert "lockgate/refusal" not in (result.meta or {})
    assert result.meta["lockgate/error"] == {
        "kind": "upstream_unavailable",
        "retryable": True,
        "server": "faulty",
    }


@both_eras
@pytest.mark.parametrize("tool", ["recorder__record_hidden", "recorder__record_nowhere"])
async def test_an_unknown_or_hidden_tool_is_a_protocol_error_not_a_refusal(
    served: Served, mode: str, tool: str
) -> None:
    async with connect(served, mode) as client:
        with pytest.raises(MCPError) as unknown:
            await client.call_tool(tool, value())

    assert unknown.value.error.message == f"Unknown tool: {tool!r}"
