"""The ``human_in_the_loop`` decorators in real LangGraph graphs: default and custom handlers,
sync and async, without a gateway and recorded in one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from anyio.from_thread import start_blocking_portal
from langgraph.types import Command
from lg_support import THREAD, asks, interrupt_of, last_tool_message, rest, tool_graph
from support import serve_asgi

from gateway.adapters.human_in_the_loop import (
    InterruptParams,
    human_in_the_loop,
    human_in_the_loop_async,
)
from gateway.approvals.errors import InvalidHumanResponse
from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets.context import Principal

AGENT = Principal(id="agent:inprocess")
DELETED: list[str] = []


@pytest.fixture(autouse=True)
def _fresh() -> None:
    DELETED.clear()


def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file.
    """
    DELETED.append(path)
    return f"deleted {path}"


async def adelete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file.
    """
    DELETED.append(path)
    return f"deleted {path}"


def decorated(kind: str, **options: Any) -> Any:
    if kind == "sync":
        return (
            human_in_the_loop(**options)(delete_file) if options else human_in_the_loop(delete_file)
        )
    wrap = human_in_the_loop_async(**options) if options else human_in_the_loop_async
    return wrap(adelete_file)


async def run(graph: Any, kind: str, value: Any) -> dict[str, Any]:
    """Run the graph: async, or sync in a worker thread (as a sync host would, with no loop)."""
    if kind == "async":
        state: dict[str, Any] = await graph.ainvoke(value, THREAD)
    else:
        state = await anyio.to_thread.run_sync(graph.invoke, value, THREAD)
    return state


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize(
    ("response", "content", "deleted"),
    [
        ({"type": "accept", "args": None}, "deleted /tmp/a", ["/tmp/a"]),
        ({"type": "edit", "args": {"path": "/tmp/b"}}, "deleted /tmp/b", ["/tmp/b"]),
        ([{"type": "response", "args": "Keep it."}], "Keep it.", []),
        ({"decisions": [{"type": "approve"}]}, "deleted /tmp/a", ["/tmp/a"]),
    ],
)
async def test_the_default_handler_asks_then_runs_edits_or_answers(
    kind: str, response: Any, content: str, deleted: list[str]
) -> None:
    tool = decorated(kind)
    assert tool.description.startswith("Delete a file.")
    graph = tool_graph([tool])
    request = interrupt_of(await run(graph, kind, asks(tool.name, {"path": "/tmp/a"})))
    assert request == {
        "action_request": {"action": tool.name, "args": {"path": "/tmp/a"}},
        "config": {
            "allow_accept": True,
            "allow_edit": True,
            "allow_respond": True,
            "allow_ignore": False,
        },
        "description": f"Please review tool call: {tool.name}",
    }
    state = await run(graph, kind, Command(resume=response))
    assert last_tool_message(state).content == content
    assert deleted == DELETED


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize(
    ("given", "error"),
    [("ignore", "unsupported response type 'ignore'"), ("later", "unknown response type 'later'")],
)
async def test_an_unknown_response_type_is_an_error_naming_it(
    kind: str, given: str, error: str
) -> None:
    tool = decorated(kind)
    graph = tool_graph([tool])
    await run(graph, kind, asks(tool.name, {"path": "/tmp/a"}))
    with pytest.raises(InvalidHumanResponse, match=error):
        await run(graph, kind, Command(resume={"type": given}))
    assert DELETED == []


async def test_custom_handlers_receive_the_call_and_the_tool() -> None:
    seen: list[InterruptParams] = []

    def handler(params: InterruptParams) -> str:
        seen.append(params)
        return f"custom: {params['tool'].invoke(params['tool_call_args'])}"

    async def ahandler(params: InterruptParams) -> str:
        seen.append(params)
        return f"async custom: {await params['tool'].ainvoke(params['tool_call_args'])}"

    sync_tool = human_in_the_loop(handler=handler)(delete_file)
    async_tool = human_in_the_loop_async(handler=ahandler)(adelete_file)
    assert sync_tool.invoke({"path": "/x"}) == "custom: deleted /x"
    assert await async_tool.ainvoke({"path": "/y"}) == "async custom: deleted /y"
    assert [(p["tool_call_name"], p["tool_call_args"]) for p in seen] == [
        ("delete_file", {"path": "/x"}),
        ("adelete_file", {"path": "/y"}),
    ]
    assert seen[0]["tool"].name == "delete_file"


async def test_with_a_gateway_each_review_is_a_pending_call_on_record(gateway: Gateway) -> None:
    tool = human_in_the_loop_async(gateway=gateway, principal=AGENT)(adelete_file)
    graph = tool_graph([tool])
    request = interrupt_of(await graph.ainvoke(asks("adelete_file", {"path": "/tmp/a"}), THREAD))
    call = await gateway.store.get(request["lockgate"]["approval_id"])
    assert call is not None
    assert (call.tool, call.state, call.principal) == ("hitl:adelete_file", "pending", AGENT.id)
    # An edit the function's schema refuses is refused by the gateway and asked again.
    state = await graph.ainvoke(Command(resume={"type": "edit", "args": {"path": 3}}), THREAD)
    assert "Invalid arguments for tool 'hitl:adelete_file'" in interrupt_of(state)["description"]
    state = await graph.ainvoke(
        Command(resume={"type": "edit", "args": {"path": "/tmp/b"}}), THREAD
    )
    assert last_tool_message(state).content == "deleted /tmp/b"
    done = await gateway.store.get(call.id)
    assert done is not None
    assert (done.state, done.decision, done.channel, done.override_args) == (
        "done",
        "edit",
        "langgraph",
        {"path": "/tmp/b"},
    )
    assert DELETED == ["/tmp/b"]


def test_an_approver_may_decide_a_recorded_review_while_the_graph_is_paused(
    graph_config: Path,
) -> None:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Gateway.from_config(graph_config)) as gateway,
        portal.wrap_async_context_manager(
            serve_asgi(build_app(gateway, manage_gateway=False))
        ) as base,
    ):
        tool = human_in_the_loop(gateway=gateway, principal=AGENT, portal=portal)(delete_file)
        graph = tool_graph([tool])
        request = interrupt_of(graph.invoke(asks("delete_file", {"path": "/tmp/a"}), THREAD))
        decision = {"decision": "deny", "message": "Not that file."}
        path = f"/approvals/{request['lockgate']['approval_id']}/decision"
        denied = portal.call(rest, base, "POST", path, decision)
        assert denied.status_code == 200, denied.text
        state = graph.invoke(Command(resume={"type": "accept"}), THREAD)
    message = last_tool_message(state)
    assert (message.content, message.status) == ("Not that file.", "error")
    assert DELETED == []


def test_the_sync_decorator_with_a_gateway_needs_its_portal(graph_config: Path) -> None:
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Gateway.from_config(graph_config)) as gateway,
        pytest.raises(ValueError, match="needs portal="),
    ):
        human_in_the_loop(gateway=gateway)(delete_file)


def test_the_decorators_are_importable_from_lockgate() -> None:
    import lockgate

    assert lockgate.human_in_the_loop is human_in_the_loop
    assert lockgate.human_in_the_loop_async is human_in_the_loop_async
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = lockgate.nope
