"""`UpstreamCalls`: tool calls over an upstream's current session: down a stdio pipe directly, or
through the SDK client; errors mapped to lockgate's; a call the server never got (it forgot our
session) sent once more on a new session."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolsets import trace_context
from toolsets.context import CallContext
from toolsets.errors import UpstreamError, UpstreamRequestError
from toolsets.refusal import failure_result
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.upstream.client_requests import REFUSED, UpstreamRequests
from toolsets.upstream.connection import UpstreamConnection
from toolsets.upstream.convert import tool_result_from_mcp
from toolsets.upstream.direct_call import DirectCall
from toolsets.upstream.stdio_pipe import TOO_LARGE
from toolsets.upstream.tasks import UpstreamTasks, task_support

__all__ = ["UpstreamCalls"]

_LOST_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)


class UpstreamCalls:
    """Calls tools of one upstream server.

    Args:
        connection: The server's session.
        requests: The server's requests to the client while a call runs.
        timeout: Seconds a call may take; past it, the call is an error result.
        tasks: Task requests to the server (a call whose context asks for a task).
    """

    def __init__(
        self,
        connection: UpstreamConnection,
        requests: UpstreamRequests,
        *,
        timeout: float,
        tasks: UpstreamTasks,
    ) -> None:
        self._connection = connection
        self._requests = requests
        self.timeout = timeout
        self._tasks = tasks

    async def call(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        """Call ``tool`` on the upstream; a call refused because the server forgot our session
        (HTTP 404, so never delivered) is sent once more on a new session.

        Raises:
            UpstreamError: the server is down or the connection was lost (a call past the
                timeout is an error result: the server is still there).
            UpstreamRequestError: the server answered with a JSON-RPC error.
        """
        try:
            return await self._once(name, args, ctx, tool)
        except UpstreamRequestError:
            if not self._connection.forgotten:
                raise
        await self._connection.reopen()
        return await self._once(name, args, ctx, tool)

    async def _once(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        connection = self._connection
        server, client, pipe = connection.name, connection.client, connection.pipe
        if client is None:
            message = f"Server {server!r} is unavailable ({connection.status})."
            raise UpstreamError(message, server=server)
        progress = ctx.progress
        meta = trace_context.with_trace(self._requests.call_meta(ctx, client.protocol_version))
        with anyio.move_on_after(self.timeout), self._requests.calling(ctx):
            try:
                if ctx.task is not None and (
                    self._tasks.modern or task_support(tool) != "forbidden"
                ):
                    ctx.task.call_id, ctx.task.decision = ctx.call_id, ctx.decision
                    ctx.task.args = args
                    return await self._tasks.create(tool, args, ctx.task)
                if pipe is not None and progress is None and not self._requests.streams(ctx):
                    call = DirectCall(pipe, tool.upstream_name, args, meta)
                    return await call.run(server, self._requests)
                result = await client.call_tool(
                    tool.upstream_name,
                    dict(args),
                    progress_callback=progress,
                    meta=cast(types.RequestParamsMeta | None, meta),
                )
                return tool_result_from_mcp(result)
            except MCPError as exc:
                error = exc.error
                withheld = self._requests.withheld(error)
                if withheld is not None:  # a tool needing what the config does not relay
                    return ToolResult.error(str(withheld))
                if isinstance(error.data, dict) and error.data.keys() & {TOO_LARGE, REFUSED}:
                    return ToolResult.error(error.message)  # the model reads the limit or refusal
                if error.code == types.CONNECTION_CLOSED:  # the SDK client lost the server
                    connection.lost()
                    message = f"Server {server!r} connection lost: {error.message}"
                    raise UpstreamError(message, server=server) from None
                raise UpstreamRequestError(
                    error.message, server=server, code=error.code, data=error.data
                ) from None
            except _LOST_ERRORS as exc:
                connection.lost()
                message = f"Server {server!r} connection lost: {exc!r}"
                raise UpstreamError(message, server=server) from None
        # Like a local function's: a result the model reads; the server is still there.
        message = f"Tool {name!r} timed out after {self.timeout:g} s."
        return failure_result(message, "upstream_timeout", server=server)
