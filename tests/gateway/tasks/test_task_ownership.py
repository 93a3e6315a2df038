"""A gateway task belongs to the principal (and tenant) that created it: anyone else gets the
answer a missing task gets, from ``tasks/get``, ``tasks/result`` and ``tasks/cancel``, and
``tasks/list`` shows each principal its own tasks only; cancelling reaches the upstream; a call
the policy denies never reaches it. HTTP face (principals are tokens), both eras."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from gateway_faces import HTTP_FACES, Face, serve_gateway
from mcp import Client
from mcp.shared.exceptions import MCPError
from support import write_config
from tasks_client import (
    call_as_task,
    list_tasks,
    modern,
    open_tasks_client,
    request,
    tasks_upstream,
    until_ended,
)

TOKENS = {"agent:a": "token-of-a", "agent:b": "token-of-b", "agent:c": "token-of-c"}
TENANTS = {"agent:a": "acme", "agent:b": "acme", "agent:c": "globex"}
POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - id: no-jobs-for-c
    tools: [jobs__job]
    principals: [agent:c]
    effect: deny
    message: Jobs are not for agent c.
"""


def _config(tmp_path: Path) -> Path:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    agents = [{"id": a, "token": t, "tenant": TENANTS[a]} for a, t in TOKENS.items()]
    return write_config(
        tmp_path,
        [tasks_upstream()],
        approvals={"store": "sqlite", "path": str(tmp_path / "pending.db")},
        policies={"files": [str(policy)]},
        auth={"agents": agents},
    )


@contextlib.asynccontextmanager
async def _clients(face: Face, tmp_path: Path) -> AsyncIterator[dict[str, Client]]:
    config = _config(tmp_path)
    async with contextlib.AsyncExitStack() as stack:
        url = await stack.enter_async_context(serve_gateway(config))
        clients = {}
        for agent, token in TOKENS.items():
            opened = open_tasks_client(face, config=config, url=url, token=token)
            clients[agent] = await stack.enter_async_context(opened)
        yield clients


async def _refusal(coro: Any) -> tuple[int, str]:
    with pytest.raises(MCPError) as raised:
        await coro
    return raised.value.error.code, raised.value.error.message


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_another_principal_gets_the_answer_of_a_missing_task(
    tmp_path: Path, face: Face
) -> None:
    with anyio.fail_after(60):
        async with _clients(face, tmp_path) as clients:
            a, b, c = clients["agent:a"], clients["agent:b"], clients["agent:c"]
            is_modern = modern(a)
            task_id = (await call_as_task(a, "jobs__job", {"key": "mine"}))["taskId"]
            missing = [await _refusal(request(a, m, "lgt_nothing")) for m in ("tasks/get",)]
            others = [
                await _refusal(request(who, method, task_id))
                for who in (b, c)
                for method in ("tasks/get", "tasks/cancel")
            ]
            if not is_modern:
                others.append(await _refusal(request(b, "tasks/result", task_id)))
                listed = {name: await list_tasks(cl) for name, cl in clients.items()}
            still = await request(a, "tasks/get", task_id)
            await a.call_tool("jobs__release", {"key": "mine"})
            ended = await until_ended(a, task_id)
    assert set(others) == set(missing)
    assert missing[0][0] == -32602
    assert still["status"] == "working"  # b's and c's cancel did not touch it
    assert ended["status"] == "completed"
    if not is_modern:
        assert [t["taskId"] for t in listed["agent:a"]] == [task_id]
        assert listed["agent:b"] == listed["agent:c"] == []


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_cancelled_task_is_cancelled_on_the_upstream(tmp_path: Path, face: Face) -> None:
    with anyio.fail_after(60):
        async with _clients(face, tmp_path) as clients:
            a = clients["agent:a"]
            is_modern = modern(a)
            task_id = (await call_as_task(a, "jobs__job", {"key": "stop"}))["taskId"]
            cancelled = await request(a, "tasks/cancel", task_id)
            ended = await until_ended(a, task_id)
            released = await a.call_tool("jobs__release", {"key": "stop"})
            again = await _refusal(request(a, "tasks/cancel", task_id))
            if not is_modern:
                result = await _refusal(request(a, "tasks/result", task_id))
    assert cancelled.get("taskId") == (None if is_modern else task_id)  # 2026: an empty ack
    assert ended["status"] == "cancelled"
    assert released.content[0].text == "0"  # the upstream's job had ended: nothing to release
    assert again[0] == -32602
    assert "terminal" in again[1]
    if not is_modern:
        assert result[1] == "Task cancelled"


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_denied_task_call_never_reaches_the_upstream(tmp_path: Path, face: Face) -> None:
    with anyio.fail_after(60):
        async with _clients(face, tmp_path) as clients:
            c = clients["agent:c"]
            is_modern = modern(c)
            answer = await call_as_task(c, "jobs__job", {"key": "denied"})
            if not is_modern:
                ended = await request(c, "tasks/get", answer["taskId"])
                answer = await request(c, "tasks/result", answer["taskId"])
            released = await c.call_tool("jobs__release", {"key": "denied"})
    assert answer["isError"] is True
    assert "Jobs are not for agent c." in answer["content"][0]["text"]
    if not is_modern:  # a gateway-owned task, ended with the refusal: a tool error, so failed
        assert ended["status"] == "failed"  # as a denied held call's task (test_held_as_task)
        assert "Jobs are not for agent c." in ended["statusMessage"]
    assert released.content[0].text == "0"  # the upstream never made a job
