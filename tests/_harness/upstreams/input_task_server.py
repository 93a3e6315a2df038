"""A test upstream MCP server whose task waits for input (the 2026-07-28 Tasks extension's
``input_required`` status, answered with ``tasks/update``), built on the MCP SDK's low-level
`Server` (the SDK serves no ``tasks/*``: they are request handlers here).

Run as ``python tests/_harness/upstreams/input_task_server.py`` (stdio, 2026-07-28 only).
``deploy(ref)`` needs a task: its task goes ``input_required`` at once with one input request
(``confirm``, an ``elicitation/create`` form asking for ``{"go": bool}``); ``tasks/update``
answering it ends the task: ``completed`` with ``deployed REF`` when accepted with ``go``,
else ``completed`` with ``not deployed REF``.
"""

from __future__ import annotations

# ruff: noqa: E402
from handoff import hand_off

hand_off()  # under pytest, a fork of its zygote runs this: the imports below are done there

import uuid
from datetime import UTC, datetime
from typing import Any

import anyio
import mcp_types as types
from echo_server import era_guard
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, Field

Ctx = ServerRequestContext[Any]
CONFIRM = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Deploy now?",
        "requestedSchema": {
            "type": "object",
            "properties": {"go": {"type": "boolean"}},
            "required": ["go"],
        },
    },
}


class UpdateParams(BaseModel):
    """``tasks/update`` params."""

    model_config = ConfigDict(populate_by_name=True, extra="allow")
    task_id: str = Field(alias="taskId")
    input_responses: dict[str, Any] = Field(alias="inputResponses")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def build() -> Server[Any]:
    """The server (see the module docstring)."""
    tasks: dict[str, dict[str, Any]] = {}
    refs: dict[str, str] = {}
    schema = {"type": "object", "properties": {"ref": {"type": "string"}}, "required": ["ref"]}
    deploy = types.Tool(
        name="deploy",
        description="Deploy a ref once confirmed.",
        input_schema=schema,
        execution=types.ToolExecution(task_support="required"),
    )

    async def list_tools(ctx: Ctx, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[deploy])

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        raise MCPError(code=types.METHOD_NOT_FOUND, message="deploy requires a task")

    async def create(ctx: Ctx, call_next: Any) -> Any:
        params = ctx.params if isinstance(ctx.params, dict) else {}
        if ctx.method != "tools/call" or params.get("name") != "deploy":
            return await call_next(ctx)
        task_id, now = f"upstream-{uuid.uuid4().hex}", _now()
        tasks[task_id] = {
            "taskId": task_id,
            "status": "input_required",
            "statusMessage": "waiting for confirmation",
            "createdAt": now,
            "lastUpdatedAt": now,
            "ttlMs": None,
            "pollIntervalMs": 50,
        }
        refs[task_id] = str((params.get("arguments") or {}).get("ref"))
        return {"resultType": "task", **tasks[task_id]}

    def find(task_id: str) -> dict[str, Any]:
        if task_id not in tasks:
            raise MCPError(code=types.INVALID_PARAMS, message="Failed to retrieve task: not found")
        return tasks[task_id]

    async def get(ctx: Ctx, params: types.GetTaskRequestParams) -> dict[str, Any]:
        task = dict(find(params.task_id))
        if task["status"] == "input_required":
            task["inputRequests"] = {"confirm": CONFIRM}
        return {"resultType": "complete", **task}

    async def update(ctx: Ctx, params: UpdateParams) -> dict[str, Any]:
        task = find(params.task_id)
        answer = params.input_responses.get("confirm")
        if task["status"] == "input_required" and isinstance(answer, dict):
            go = answer.get("action") == "accept" and (answer.get("content") or {}).get("go")
            text = f"{'deployed' if go else 'not deployed'} {refs[params.task_id]}"
            task.update(status="completed", statusMessage="answered", lastUpdatedAt=_now())
            task["result"] = {"content": [{"type": "text", "text": text}]}
        return {"resultType": "complete"}

    async def cancel(ctx: Ctx, params: types.CancelTaskRequestParams) -> dict[str, Any]:
        task = find(params.task_id)
        if task["status"] == "input_required":
            task.update(status="cancelled", lastUpdatedAt=_now())
        return {"resultType": "complete"}

    server: Server[Any] = Server("deploys", on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware.append(create)
    server.add_request_handler("tasks/get", types.GetTaskRequestParams, get)
    server.add_request_handler("tasks/update", UpdateParams, update)
    server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, cancel)
    return server


async def _serve() -> None:
    server = build()
    server.middleware.insert(0, era_guard("modern"))
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(_serve)
