"""The official Python SDK client as a tasks caller, in both eras.

The SDK (2.3) carries the task types but no task calls. 2026-07-28: `TasksClaim` is a client
extension (the SDK's own mechanism) that declares ``io.modelcontextprotocol/tasks`` on each
request and claims the ``resultType: "task"`` shape, so ``session.call_tool(...,
allow_claimed=True)`` returns the task. 2025-11-25: the SDK checks a ``tools/call`` result
against ``CallToolResult`` and refuses a ``CreateTaskResult``, so `call_as_task` sends that one
request through the session's dispatcher (the only place the SDK is gone around).
``tasks/get``, ``tasks/result``, ``tasks/cancel`` and ``tasks/list`` go through
``session.send_request`` in both eras.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
import mcp_types as types
from gateway_faces import CLI, DOWNSTREAM_AUTHORIZATION, Face
from mcp import Client, StdioServerParameters
from mcp.client.extension import (
    ClaimContext,
    ClientExtension,
    NotificationBinding,
    ResultClaim,
)
from mcp.client.streamable_http import streamable_http_client
from paths import HARNESS
from pydantic import BaseModel, ConfigDict

from toolsets._sdk_compat import unchecked_request

TASKS_SERVER = str(HARNESS / "upstreams" / "tasks_server.py")
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TERMINAL = frozenset({"completed", "failed", "cancelled"})


def tasks_upstream(era: str = "dual", name: str = "jobs") -> dict[str, Any]:
    """Config entry for the tasks test server (`tasks_server.py`) over stdio."""
    return {
        "name": name,
        "transport": "stdio",
        "command": sys.executable,
        "args": [TASKS_SERVER, "--era", era],
    }


class CreatedTask(types.Result):
    """2026-07-28's ``CreateTaskResult`` (the task, ``resultType: "task"``)."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str


async def _unresolved(result: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
    raise AssertionError("tests take the task itself (allow_claimed=True)")


StatusHandler = Callable[[types.TaskStatusNotificationParams], Awaitable[None]]
FrameHandler = Callable[["Raw"], Awaitable[None]]
"""Receives 2026-07-28's ``notifications/tasks`` frames (a listen stream's)."""


class TasksClaim(ClientExtension):
    """Declares the Tasks extension and claims its ``CreateTaskResult``; ``on_status`` hears
    2025-11-25's ``notifications/tasks/status``, ``on_task`` 2026-07-28's
    ``notifications/tasks``."""

    identifier = TASKS_EXTENSION

    def __init__(
        self, on_status: StatusHandler | None = None, on_task: FrameHandler | None = None
    ) -> None:
        self.on_status = on_status
        self.on_task = on_task

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=_unresolved)]

    def notifications(self) -> list[NotificationBinding[Any]]:
        bindings: list[NotificationBinding[Any]] = []
        if self.on_status is not None:
            params = types.TaskStatusNotificationParams
            method = "notifications/tasks/status"
            binding = NotificationBinding(method=method, params_type=params, handler=self.on_status)
            bindings.append(binding)
        if self.on_task is not None:
            frames = NotificationBinding(
                method="notifications/tasks", params_type=Raw, handler=self.on_task
            )
            bindings.append(frames)
        return bindings


class Raw(BaseModel):
    """Any JSON object, kept whole."""

    model_config = ConfigDict(extra="allow")

    @property
    def data(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


@contextlib.asynccontextmanager
async def open_tasks_client(
    face: Face,
    *,
    config: Path,
    url: str | None = None,
    token: str | None = None,
    on_status: StatusHandler | None = None,
    on_task: FrameHandler | None = None,
) -> AsyncIterator[Client]:
    """An `mcp.Client` on ``face`` that can call tools as tasks (``token``: as bearer over
    HTTP, as ``$LOCKGATE_TOKEN`` of the stdio gateway)."""
    async with contextlib.AsyncExitStack() as stack:
        if face.transport == "http":
            assert url is not None
            authorization = f"Bearer {token}" if token else DOWNSTREAM_AUTHORIZATION
            http = httpx2.AsyncClient(
                headers={"Authorization": authorization}, timeout=httpx2.Timeout(30, read=300)
            )
            await stack.enter_async_context(http)
            target: Any = streamable_http_client(url, http_client=http)
        else:
            argv = [*CLI[1:], "stdio", "--config", str(config)]
            env = {"LOCKGATE_TOKEN": token} if token else None
            target = StdioServerParameters(command=sys.executable, args=argv, env=env)
        client = Client(
            target,
            mode=face.mode,
            extensions=[TasksClaim(on_status, on_task)],
            read_timeout_seconds=30,
        )
        yield await stack.enter_async_context(client)


def modern(client: Client) -> bool:
    return client.protocol_version == "2026-07-28"


async def call_as_task(
    client: Client, name: str, args: dict[str, Any], *, ttl: int | None = None
) -> dict[str, Any]:
    """Call ``name`` as a task; the task the gateway answered with (``taskId``, ``status``...),
    or the plain ``CallToolResult`` (wire form) when it made none."""
    if modern(client):
        answer = await client.session.call_tool(name, args, allow_claimed=True)
        return answer.model_dump(mode="json", by_alias=True, exclude_none=True)
    params = {"name": name, "arguments": args, "task": {"ttl": ttl} if ttl else {}}
    raw = await client.session._dispatcher.send_raw_request("tools/call", params, {})
    if "task" not in raw:
        return dict(raw)
    meta = {"_meta": raw["_meta"]} if "_meta" in raw else {}  # lockgate/pending of a held call
    return dict(raw["task"]) | meta


async def request(client: Client, method: str, task_id: str) -> dict[str, Any]:
    """``tasks/get``, ``tasks/result`` or ``tasks/cancel`` for ``task_id``; the raw result."""
    kinds: dict[str, type[types.Request[Any, Any]]] = {
        "tasks/get": types.GetTaskRequest,
        "tasks/result": types.GetTaskPayloadRequest,
        "tasks/cancel": types.CancelTaskRequest,
    }
    sent = kinds[method].model_validate({"params": {"taskId": task_id}})
    return (await client.session.send_request(sent, Raw)).data


async def list_tasks(client: Client) -> list[dict[str, Any]]:
    """``tasks/list`` (2025-11-25)."""
    answer = await client.session.send_request(types.ListTasksRequest(), Raw)
    return list(answer.data["tasks"])


async def until_ended(client: Client, task_id: str) -> dict[str, Any]:
    """Poll ``tasks/get`` at the interval the task suggests until it ends; its last state.

    Polling is the protocol's own way to follow a task (2026-07-28 has no blocking result)."""
    while True:
        task = await request(client, "tasks/get", task_id)
        if task["status"] in TERMINAL:
            return task
        await _suggested_pause(task)


async def until_status(client: Client, task_id: str, status: str) -> dict[str, Any]:
    """Poll ``tasks/get`` as `until_ended` does until the task is in ``status`` (failing if it
    ends in another); its state then."""
    while True:
        task = await request(client, "tasks/get", task_id)
        if task["status"] == status:
            return task
        assert task["status"] not in TERMINAL, task
        await _suggested_pause(task)


async def until_message(client: Client, task_id: str, text: str) -> dict[str, Any]:
    """Poll ``tasks/get`` as `until_ended` does until the task's status message holds ``text``
    (failing if it ends first); its state then."""
    while True:
        task = await request(client, "tasks/get", task_id)
        if text in (task.get("statusMessage") or ""):
            return task
        assert task["status"] not in TERMINAL, task
        await _suggested_pause(task)


async def _suggested_pause(task: dict[str, Any]) -> None:
    """Wait the poll interval the task suggests (the protocol's way to follow a task)."""
    interval = task.get("pollIntervalMs", task.get("pollInterval")) or 100
    await anyio.sleep(interval / 1000)


@contextlib.asynccontextmanager
async def listening_to_tasks(client: Client, task_ids: list[str]) -> AsyncIterator[None]:
    """A 2026-07-28 ``subscriptions/listen`` stream naming ``task_ids`` (the Tasks extension's
    ``taskIds``), open while inside; its frames reach the client's ``on_task``. The SDK's
    ``Client.listen`` knows no task ids, so the request goes out as the gateway's own raw
    requests do (`toolsets._sdk_compat.unchecked_request`)."""
    params = {"notifications": {"taskIds": task_ids}}
    async with anyio.create_task_group() as tg:

        async def stream() -> None:
            await unchecked_request(
                client.session, "subscriptions/listen", params, extension=TASKS_EXTENSION
            )

        tg.start_soon(stream)
        try:
            yield
        finally:
            tg.cancel_scope.cancel()
