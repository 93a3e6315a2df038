"""`gateway.adapters.openai` end to end: schemas, tool calls, approvals, and the real client.

Tool-call tests run against the gateway in process and over HTTP in both MCP eras; the chat and
Responses loops use the real ``openai`` client against the example's fake server.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
from collections.abc import AsyncIterator, Callable
from types import ModuleType
from typing import Any, TypeAlias

import adapter_tools
import pytest
from adapter_support import BACKENDS, OPS, OPS_TOKEN, agent_of, token_of
from openai import AsyncOpenAI
from openai.types.responses import ResponseFunctionToolCall
from paths import REPO

from gateway.adapters.openai import (
    HostDecision,
    InProcessGateway,
    RemoteGateway,
    ToolCallsOutcome,
    chat_tools,
    complete_pending,
    responses_tools,
    run_responses_calls,
    run_tool_calls,
)
from gateway.gateway import Gateway
from toolsets.tooldef import TOOL_NAME_RE, ToolDef

FAKE_SERVER = REPO / "examples" / "fake_openai_server.py"
Client: TypeAlias = InProcessGateway | RemoteGateway
Clients = Callable[..., contextlib.AbstractAsyncContextManager[Client]]


def fake_server() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fake_openai_server", FAKE_SERVER)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def client(gateway: Gateway, gateway_url: str, backend: str) -> Clients:
    """Opens a gateway client on ``backend``, with or without approver credentials."""

    @contextlib.asynccontextmanager
    async def open_client(*, approver: bool = True) -> AsyncIterator[Client]:
        built: Client
        if backend == "inprocess":
            who = OPS if approver else None
            built = InProcessGateway(gateway=gateway, principal=agent_of(backend), approver=who)
        else:
            built = RemoteGateway(
                gateway_url,
                token=token_of(backend),
                approver_token=OPS_TOKEN if approver else None,
                mode="legacy" if backend == "http-legacy" else "auto",
            )
        async with built:
            yield built

    return open_client


def call(call_id: str, name: str, args: dict[str, Any] | str) -> dict[str, Any]:
    arguments = args if isinstance(args, str) else json.dumps(args)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def contents(outcome: ToolCallsOutcome) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in outcome.messages}


async def test_tool_schemas_for_chat_and_responses_keep_names_descriptions_and_schemas(
    gateway: Gateway,
) -> None:
    tools = await gateway.tools()
    chat = {t["function"]["name"]: t for t in chat_tools(tools)}
    flat = {t["name"]: t for t in responses_tools(tools.values())}
    assert set(chat) == set(flat) == set(tools)
    assert all(TOOL_NAME_RE.fullmatch(name) for name in chat)
    echo = tools["echo__echo"]
    assert chat["echo__echo"] == {
        "type": "function",
        "function": {
            "name": "echo__echo",
            "description": "Echo the text back.",
            "parameters": dict(echo.input_schema),
        },
    }
    assert flat["echo__echo"] == {
        "type": "function",
        "name": "echo__echo",
        "description": "Echo the text back.",
        "parameters": dict(echo.input_schema),
        "strict": False,
    }
    assert chat_tools([echo], strict=False)[0]["function"]["strict"] is False


def test_a_tool_name_openai_refuses_is_an_error() -> None:
    with pytest.raises(ValueError, match="'bad name'"):
        chat_tools([ToolDef(name="bad name")])


async def test_run_tool_calls_answers_each_call_and_reports_held_ones(client: Clients) -> None:
    calls = [
        call("a", "echo__echo", {"text": "hi"}),
        call("b", "echo__fail", {"message": "x"}),
        call("c", "local__record", {"text": "held"}),
        call("d", "nope", {}),
        call("e", "echo__echo", "{not json"),
        {"id": "f", "type": "custom", "custom": {"name": "x", "input": ""}},
    ]
    async with client() as gateway:
        outcome = await run_tool_calls(gateway, calls)
    assert [m["tool_call_id"] for m in outcome.messages] == ["a", "b", "d", "e", "f"]
    assert all(m["role"] == "tool" for m in outcome.messages)
    got = contents(outcome)
    assert got["a"] == "hi"
    assert got["b"] == "Error: Failing is forbidden here; pick another tool."
    assert got["d"] == "Error: Unknown tool: 'nope'"
    assert got["e"].startswith("Error: the arguments are not valid JSON")
    assert got["f"] == "Error: only function tool calls are supported."
    (held,) = outcome.pending
    assert not outcome.complete
    assert (held.tool_call_id, held.kind, held.tool, held.args) == (
        "c",
        "approval",
        "local__record",
        {"text": "held"},
    )
    assert held.approval_id.startswith("ap_")
    assert (held.rule_id, held.reason) == ("record-needs-ops", "recording needs an operator")
    assert adapter_tools.EXECUTED == []


async def test_complete_pending_applies_approve_edit_deny_and_respond_once(
    client: Clients, gateway: Gateway
) -> None:
    calls = [call(i, "local__record", {"text": i}) for i in ("p", "q", "r", "s")]
    decisions = {
        "p": HostDecision.approve(),
        "q": HostDecision.approve({"text": "q2"}),
        "r": HostDecision.deny("Not that one."),
        "s": HostDecision.respond("Recorded by hand."),
    }
    async with client() as remote:
        first = await run_tool_calls(remote, calls)
        assert [p.tool_call_id for p in first.pending] == ["p", "q", "r", "s"]
        done = await complete_pending(remote, first.pending, decisions=decisions)
        again = await run_tool_calls(remote, calls[:2])  # new calls: held again, not re-run
    assert done.complete
    assert contents(done) == {
        "p": "recorded p",
        "q": "recorded q2",
        "r": "Error: Not that one.",
        "s": "Recorded by hand.",
    }
    assert sorted(adapter_tools.EXECUTED) == ["p", "q2"]
    assert [p.tool_call_id for p in again.pending] == ["p", "q"]
    record = await gateway.store.get(first.pending[1].approval_id)
    assert record is not None
    assert (record.state, record.decision, record.delivered) == ("done", "edit", True)


async def test_held_calls_wait_for_the_gateways_approvers_when_the_host_cannot_decide(
    client: Clients, gateway: Gateway
) -> None:
    async with client(approver=False) as remote:
        first = await run_tool_calls(remote, [call("w", "local__record", {"text": "w"})])
        still = await complete_pending(
            remote, first.pending, decisions={"w": HostDecision.approve()}
        )
        (waiting,) = still.pending
        assert waiting.note
        assert adapter_tools.EXECUTED == []
        await gateway.approvals.decide(waiting.approval_id, "approve", by=OPS, channel="test")
        done = await complete_pending(remote, still.pending)
    assert contents(done) == {"w": "recorded w"}
    assert adapter_tools.EXECUTED == ["w"]


async def test_external_calls_stay_pending_until_the_host_posts_their_result(
    client: Clients,
) -> None:
    async with client() as remote:
        first = await run_tool_calls(remote, [call("x", "lookup", {"word": "gate"})])
        (held,) = first.pending
        assert (held.kind, held.rule_id) == ("external", "lookups-run-outside")
        done = await complete_pending(remote, first.pending, results={"x": {"meaning": "a way in"}})
    assert contents(done) == {"x": '{"meaning": "a way in"}'}


async def test_tool_calls_run_concurrently(client: Clients) -> None:
    meeting = {"meeting": "batch", "parties": 4}
    calls = [call(f"m{i}", "local__rendezvous", meeting) for i in range(4)]
    async with client() as remote:
        outcome = await run_tool_calls(remote, calls, max_concurrency=4)
    assert contents(outcome) == {f"m{i}": "batch: met 4" for i in range(4)}


async def test_responses_function_calls_get_function_call_output_items(client: Clients) -> None:
    items: list[Any] = [
        {"type": "message", "role": "assistant", "content": []},
        ResponseFunctionToolCall(
            type="function_call", call_id="r1", name="echo__echo", arguments='{"text": "yo"}'
        ),
        {"type": "function_call", "call_id": "r2", "name": "local__record", "arguments": "{}"},
        {
            "type": "function_call",
            "call_id": "r3",
            "name": "local__record",
            "arguments": '{"text": "z"}',
        },
    ]
    async with client() as remote:
        outcome = await run_responses_calls(remote, items)
        done = await complete_pending(
            remote, outcome.pending, decisions={"r3": HostDecision.approve()}
        )
    assert outcome.messages[0] == {"type": "function_call_output", "call_id": "r1", "output": "yo"}
    assert outcome.messages[1]["call_id"] == "r2"
    assert outcome.messages[1]["output"].startswith("Error:")
    assert [p.api for p in outcome.pending] == ["responses"]
    assert done.messages == [
        {"type": "function_call_output", "call_id": "r3", "output": "recorded z"}
    ]


@contextlib.asynccontextmanager
async def openai_client(
    script: list[tuple[str, dict[str, Any]]],
) -> AsyncIterator[tuple[AsyncOpenAI, Any]]:
    fake = fake_server()
    app = fake.build_app(script)
    async with (
        fake.serve(app) as base_url,
        AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0) as client,
    ):
        yield client, app


SCRIPT = [
    ("echo__echo", {"text": "hello"}),
    ("local__record", {"text": "loop"}),
    ("echo__fail", {"message": "x"}),
]


async def test_a_chat_loop_with_the_real_openai_client_pauses_for_an_approval(
    client: Clients,
) -> None:
    async with client() as gateway, openai_client(SCRIPT) as (openai, app):
        tools = chat_tools(await gateway.list_tools())
        messages: list[Any] = [{"role": "user", "content": "go"}]
        reply = await openai.chat.completions.create(model="m", messages=messages, tools=tools)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        outcome = await run_tool_calls(gateway, message.tool_calls)
        assert [p.tool_call_id for p in outcome.pending] == ["call_1"]
        decided = {"call_1": HostDecision.approve({"text": "loop-edited"})}
        later = await complete_pending(gateway, outcome.pending, decisions=decided)
        messages += outcome.messages + later.messages
        final = await openai.chat.completions.create(model="m", messages=messages, tools=tools)
    assert app.state.requests == [["user"], ["user", "assistant", "tool", "tool", "tool"]]
    text = final.choices[0].message.content or ""
    assert "call_0: hello" in text
    assert "call_1: recorded loop-edited" in text
    assert "call_2: Error: Failing is forbidden here" in text
    assert adapter_tools.EXECUTED == ["loop-edited"]


async def test_a_responses_loop_with_the_real_openai_client_pauses_for_an_approval(
    client: Clients,
) -> None:
    async with client() as gateway, openai_client(SCRIPT[:2]) as (openai, app):
        tools = responses_tools(await gateway.list_tools())
        first = await openai.responses.create(model="m", input="go", tools=tools)
        outcome = await run_responses_calls(gateway, first.output)
        later = await complete_pending(
            gateway, outcome.pending, decisions={"call_1": HostDecision.approve()}
        )
        replay = [item.model_dump(exclude_none=True) for item in first.output]
        items: Any = [*replay, *outcome.messages, *later.messages]
        final = await openai.responses.create(model="m", input=items, tools=tools)
    assert final.output_text == "All done. call_0: hello; call_1: recorded loop"
    assert app.state.requests[1] == [
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
