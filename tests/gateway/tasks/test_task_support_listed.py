"""A held call answered as a task needs the client to call the tool as a task, and 2025-11-25
forbids that (a MUST NOT) for a tool whose listing has no ``execution.taskSupport`` (absent is
``forbidden``). The gateway lists ``taskSupport: optional`` for a tool a rule may hold as a task
(`policies.task_offer`), whatever its upstream lists, while the pin still covers the upstream's
definition; a tool no rule can hold that way is listed as its upstream lists it. 2026-07-28 has
no per-tool task support (the server decides per request), so its listing has no ``execution``.

The official Python SDK client does not check ``taskSupport`` (the MCP Inspector does), so the
client here checks it as the spec asks a client to: a call as a task only to a tool that lists
``optional`` or ``required``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from approvals_e2e_support import RECORDER, decide, executions, marker
from gateway_faces import HTTP_FACES, Face
from held_task_support import held_rig
from mcp import Client
from tasks_client import call_as_task, modern, request, until_ended

from policies.engine import PolicyEngine
from policies.task_offer import may_answer_as_task
from toolsets.tooldef import ToolDef

POLICY = """\
version: 1
defaults:
  effect: allow
  approval: {approvers: ["role:security"], expires: 2m}
rules:
  - {id: held, tools: [recorder__record], effect: ask}
  - id: held-open
    tools: [recorder__record_brief]
    effect: ask
    approval: {as_task: never}
  - id: caller-decides
    tools: [recorder__record_caller]
    effect: ask
    approval: {approvers: [caller]}
"""

LEGACY_LISTED = {
    "recorder__record": "optional",  # held, as_task auto: a task is offered
    "recorder__record_brief": None,  # as_task never: held open, no task
    "recorder__record_caller": None,  # auto with the caller deciding: held in-band, no task
    "recorder__record_free": None,  # no rule holds it: as its upstream lists it
}


async def _strict_call_as_task(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """`call_as_task` by a client that keeps 2025-11-25's rule: no task-augmented call to a
    tool whose listing says ``forbidden`` (or nothing)."""
    if not modern(client):
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        execution = listed[name].execution
        support = execution.task_support if execution is not None else None
        if support not in ("optional", "required"):
            raise AssertionError(f"{name} lists taskSupport {support!r}: no task call allowed")
    return await call_as_task(client, name, args)


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_strict_client_holds_as_a_task_a_call_to_a_tool_its_upstream_lists_no_tasks_for(
    tmp_path: Path, face: Face
) -> None:
    value = marker("strict")
    log = tmp_path / "executions.jsonl"
    recorder = {"name": "recorder", "transport": "stdio", "command": sys.executable,
                "args": [RECORDER, "--log", str(log)]}  # fmt: skip
    with anyio.fail_after(90):
        async with held_rig(tmp_path, face, [recorder], POLICY) as (gateway, client, api):
            is_modern = modern(client)
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            created = await _strict_call_as_task(client, "recorder__record", {"value": value})
            approval = created["statusMessage"].split()[3].rstrip(";")
            assert (await decide(api, approval, "approve")).status_code == 200
            ended = await until_ended(client, created["taskId"])
            if is_modern:
                result = ended["result"]
            else:
                result = await request(client, "tasks/result", created["taskId"])
            upstream = await gateway.tools()
    wire = {name: tools[name].model_dump(by_alias=True, exclude_none=True) for name in tools}
    if is_modern:
        assert all("execution" not in wire[name] for name in LEGACY_LISTED)
    else:
        listed = {
            name: wire[name].get("execution", {}).get("taskSupport") for name in LEGACY_LISTED
        }
        assert listed == LEGACY_LISTED
    # the pin covers the upstream's definition (no execution), not the offer
    held = upstream["recorder__record"]
    assert held.execution is None
    assert wire["recorder__record"]["_meta"]["lockgate/pin"] == held.pin
    assert created["status"] == "input_required"
    assert ended["status"] == "completed"
    assert result["content"][0]["text"] == f"recorded {value}"
    assert len(executions(log, value)) == 1


DEFAULT_ASK = """\
version: 1
defaults:
  effect: ask
rules:
  - {id: free, tools: [files__read], effect: allow}
  - {id: sometimes, tools: [files__list], effect: allow, when: "args.path == 'a'"}
  - {id: worker, tools: [jobs__*], effect: defer}
  - {id: watched, tools: [files__stat], effect: allow}
  - {id: trial, tools: [files__stat], effect: ask, mode: shadow}
  - {id: held-open, tools: [files__delete], effect: ask, approval: {as_task: never}}
  - id: caller-too
    tools: [files__move]
    effect: ask
    approval: {approvers: [caller], as_task: always}
"""


@pytest.mark.parametrize(
    ("tool", "offered"),
    [
        pytest.param("files__write", True, id="held by the default"),
        pytest.param("files__read", False, id="always allowed by a rule"),
        pytest.param("files__list", True, id="a conditional allow leaves the default"),
        pytest.param("jobs__run", True, id="deferred"),
        pytest.param("files__stat", False, id="a shadow rule never holds"),
        pytest.param("files__delete", False, id="as_task never"),
        pytest.param("files__move", True, id="as_task always with the caller deciding"),
    ],
)
def test_the_tools_a_held_call_may_be_answered_as_a_task_for(
    tmp_path: Path, tool: str, offered: bool
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(DEFAULT_ASK, encoding="utf-8")
    engine = PolicyEngine.load([policy])
    server = tool.split("__", maxsplit=1)[0]
    assert may_answer_as_task(engine, ToolDef(name=tool, server=server)) is offered
