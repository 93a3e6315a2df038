"""The calling user decides its own held call: ``elicitation/create`` on a 2025-11-25 client,
a sealed ``InputRequiredResult`` on a 2026-07-28 client (which `mcp.Client` answers through the
same elicitation callback and retries by itself).

``recorder__record_caller`` is held for ``[caller, role:security]`` with ``hold: 1s``.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from approvals_e2e_support import (
    AGENT,
    INTERN_TOKEN,
    OTHER_AGENT_TOKEN,
    Rig,
    agent_client,
    answering,
    api_client,
    decide,
    marker,
    pending_meta,
    text_of,
    wait_for_call,
)
from mcp.shared.exceptions import MCPError
from support import MODES

both_eras = pytest.mark.parametrize("mode", MODES)
CALLER = "recorder__record_caller"
INPUT_KEY = "lockgate_approval"


def _channel(mode: str) -> str:
    return "elicitation" if mode == "legacy" else "input_required"


@both_eras
async def test_the_caller_approves_its_own_call_from_the_form_it_is_shown(
    rig: Rig, mode: str
) -> None:
    value = marker("caller-approve")
    asked: list[types.ElicitRequestParams] = []
    callback = answering("accept", {"decision": "approve"}, asked=asked)
    async with (
        agent_client(rig.mcp_url, mode, elicitation_callback=callback) as client,
        api_client(rig.base) as api,
    ):
        with anyio.fail_after(20):
            result = await client.call_tool(CALLER, {"value": value, "count": 7})
            held = await wait_for_call(api, value, state="done")

    assert not result.is_error, result
    assert text_of(result) == f"recorded {value}"
    assert rig.executions(value) == [{"value": value, "count": 7}]
    [question] = asked
    assert isinstance(question, types.ElicitRequestFormParams)
    assert CALLER in question.message
    assert value in question.message
    assert "the calling user confirms each recording" in question.message
    properties = question.requested_schema["properties"]
    assert properties["decision"]["enum"] == ["approve", "deny", "edit", "respond"]
    assert "args" in properties  # edit is offered, so edited arguments can be given
    assert held["args"]["value"] == value
    assert held["decided_by"] == AGENT
    assert held["principal"] == AGENT
    assert held["channel"] == _channel(mode)


@both_eras
@pytest.mark.parametrize(
    ("action", "content", "message"),
    [
        pytest.param("decline", None, "The user declined this call.", id="decline"),
        pytest.param(
            "accept",
            {"decision": "deny", "message": "Wrong customer, stop."},
            "Wrong customer, stop.",
            id="deny",
        ),
    ],
)
async def test_the_caller_refusing_its_call_denies_it(
    rig: Rig, mode: str, action: str, content: dict[str, Any] | None, message: str
) -> None:
    value = marker("caller-deny")
    callback = answering(action, content)
    async with (
        agent_client(rig.mcp_url, mode, elicitation_callback=callback) as client,
        api_client(rig.base) as api,
    ):
        with anyio.fail_after(20):
            result = await client.call_tool(CALLER, {"value": value})
        meta = pending_meta(result)
        record = (await api.get(f"/api/approvals/{meta['id']}")).json()

    assert result.is_error
    assert text_of(result) == message
    assert record["state"] == "denied"
    assert record["decision"] == "deny"
    assert record["channel"] == _channel(mode)
    assert rig.executions(value) == []


@both_eras
async def test_the_caller_edits_its_call_and_the_edited_arguments_run(rig: Rig, mode: str) -> None:
    value = marker("caller-edit")
    edited = {"value": f"{value}-edited", "tags": ["checked"]}
    callback = answering("accept", {"decision": "edit", "args": json.dumps(edited)})
    async with agent_client(rig.mcp_url, mode, elicitation_callback=callback) as client:
        with anyio.fail_after(20):
            result = await client.call_tool(CALLER, {"value": value})

    assert not result.is_error, result
    assert text_of(result) == f"recorded {value}-edited"
    assert rig.executions(value) == []
    assert rig.executions(f"{value}-edited") == [edited]


@both_eras
async def test_a_caller_who_cancels_leaves_the_decision_to_an_approver(rig: Rig, mode: str) -> None:
    value = marker("caller-cancel")
    asked: list[types.ElicitRequestParams] = []
    callback = answering("cancel", asked=asked)
    async with (
        agent_client(rig.mcp_url, mode, elicitation_callback=callback) as client,
        api_client(rig.base) as api,
    ):
        with anyio.fail_after(20):
            first = await client.call_tool(CALLER, {"value": value})
            meta = pending_meta(first)
            approved = await decide(api, meta["id"], "approve")
            again = await client.call_tool(CALLER, {"value": value})

    assert first.is_error
    assert meta["state"] == "pending"
    assert approved.status_code == 200, approved.text
    assert not again.is_error, again
    assert len(asked) == 1  # the approved call is not put to the caller again
    assert rig.executions(value) == [{"value": value}]


@both_eras
async def test_a_client_that_cannot_elicit_is_held_for_the_approvers(rig: Rig, mode: str) -> None:
    value = marker("no-elicitation")
    async with agent_client(rig.mcp_url, mode) as client:
        with anyio.fail_after(20):
            result = await client.call_tool(CALLER, {"value": value})

    assert result.is_error
    assert pending_meta(result)["state"] == "pending"
    assert rig.executions(value) == []


@both_eras
async def test_the_caller_is_not_asked_when_the_rule_does_not_name_it(rig: Rig, mode: str) -> None:
    value = marker("not-caller")
    asked: list[types.ElicitRequestParams] = []
    callback = answering("accept", {"decision": "approve"}, asked=asked)
    async with (
        agent_client(rig.mcp_url, mode, elicitation_callback=callback) as client,
        api_client(rig.base) as api,
    ):

        async def deny() -> None:
            held = await wait_for_call(api, value)
            response = await decide(api, held["id"], "deny", message="security says no")
            assert response.status_code == 200, response.text

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(deny)
                result = await client.call_tool("recorder__record", {"value": value})

    assert asked == []
    assert result.is_error
    assert text_of(result) == "security says no"
    assert rig.executions(value) == []


@both_eras
async def test_a_caller_cannot_edit_its_call_into_arguments_its_role_is_denied(
    rig: Rig, mode: str
) -> None:
    value = marker("dev")
    production = f"prod-{value}"
    callback = answering("accept", {"decision": "edit", "args": json.dumps({"value": production})})
    async with agent_client(
        rig.mcp_url, mode, token=INTERN_TOKEN, elicitation_callback=callback
    ) as intern:
        with anyio.fail_after(20):
            direct = await intern.call_tool(CALLER, {"value": production})
            result = await intern.call_tool(CALLER, {"value": value})

    assert text_of(direct) == "Interns may not record production values."
    assert rig.executions(production) == []
    assert result.is_error  # the refused edit leaves the call to the approvers


async def test_an_unanswered_elicitation_does_not_hold_the_call_past_its_hold(rig: Rig) -> None:
    value = marker("unanswered")
    release = anyio.Event()
    asked = anyio.Event()

    async def never_answers(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.set()
        await release.wait()
        return types.ElicitResult(action="cancel")

    async with agent_client(rig.mcp_url, "legacy", elicitation_callback=never_answers) as client:
        try:
            with anyio.fail_after(30):  # hold is 1 s
                result = await client.call_tool(CALLER, {"value": value})
        finally:
            release.set()

    assert asked.is_set()
    assert pending_meta(result)["state"] == "pending"
    assert rig.executions(value) == []


# -- driving the 2026-07-28 retry by hand ----------------------------------------------------


# The client declares elicitation (so it is asked), but `session.call_tool` leaves the answer
# to the test instead of calling back.
NEVER_CALLED = answering("cancel")


def _approve() -> dict[str, types.InputResponse]:
    return {INPUT_KEY: types.ElicitResult(action="accept", content={"decision": "approve"})}


def _tampered(state: str) -> str:
    middle = len(state) // 2
    return state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1 :]


async def _input_required(client: Any, args: dict[str, Any]) -> types.InputRequiredResult:
    result = await client.session.call_tool(CALLER, args, allow_input_required=True)
    assert isinstance(result, types.InputRequiredResult), result
    assert set(result.input_requests or {}) == {INPUT_KEY}
    assert result.request_state
    return result


async def test_a_tampered_request_state_is_refused_and_decides_nothing(rig: Rig) -> None:
    value = marker("tamper")
    args = {"value": value}
    async with (
        agent_client(rig.mcp_url, "auto", elicitation_callback=NEVER_CALLED) as client,
        api_client(rig.base) as api,
    ):
        with anyio.fail_after(20):
            asked = await _input_required(client, args)
            held = await wait_for_call(api, value)
            with pytest.raises(MCPError, match=r"Invalid request_state: .*malformed") as refused:
                await client.session.call_tool(
                    CALLER,
                    args,
                    allow_input_required=True,
                    input_responses=_approve(),
                    request_state=_tampered(asked.request_state or ""),
                )
            record = (await api.get(f"/api/approvals/{held['id']}")).json()

    assert refused.value.code == types.INVALID_PARAMS
    assert record["state"] == "pending"
    assert rig.executions(value) == []


async def test_a_replayed_request_state_is_refused_and_runs_nothing_twice(rig: Rig) -> None:
    value = marker("replay")
    args = {"value": value}
    async with agent_client(rig.mcp_url, "auto", elicitation_callback=NEVER_CALLED) as client:
        with anyio.fail_after(20):
            asked = await _input_required(client, args)
            answered = await client.session.call_tool(
                CALLER,
                args,
                allow_input_required=True,
                input_responses=_approve(),
                request_state=asked.request_state,
            )
            with pytest.raises(MCPError, match=r"Invalid request_state: .*replayed"):
                await client.session.call_tool(
                    CALLER,
                    args,
                    allow_input_required=True,
                    input_responses=_approve(),
                    request_state=asked.request_state,
                )

    assert isinstance(answered, types.CallToolResult)
    assert not answered.is_error, answered
    assert rig.executions(value) == [args]


async def test_a_request_state_is_refused_to_another_agent(rig: Rig) -> None:
    value = marker("stolen")
    args = {"value": value}
    async with (
        agent_client(rig.mcp_url, "auto", elicitation_callback=NEVER_CALLED) as client,
        agent_client(
            rig.mcp_url, "auto", token=OTHER_AGENT_TOKEN, elicitation_callback=NEVER_CALLED
        ) as thief,
        api_client(rig.base) as api,
    ):
        with anyio.fail_after(20):
            asked = await _input_required(client, args)
            held = await wait_for_call(api, value)
            with pytest.raises(MCPError, match=r"Invalid request_state: .*principal"):
                await thief.session.call_tool(
                    CALLER,
                    args,
                    allow_input_required=True,
                    input_responses=_approve(),
                    request_state=asked.request_state,
                )
            record = (await api.get(f"/api/approvals/{held['id']}")).json()

    assert record["state"] == "pending"
    assert rig.executions(value) == []
