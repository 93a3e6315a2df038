"""`RemoteGateway`: a lockgate gateway over HTTP, MCP at ``/mcp`` and decisions over ``/api``."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Self, TypedDict, TypeVar, cast

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from gateway.adapters._client import (
    CannotDecide,
    DecisionRejected,
    HeldCall,
    HostDecision,
    minimal_interrupt_request,
)
from gateway.adapters._remote_tasks import RemoteTasks, tasks_offered
from gateway.approvals.human_interrupt import noted
from gateway.mcp.calls import HOLD_META
from toolsets._sdk_compat import create_mcp_http_client
from toolsets.errors import ToolNotFoundError, UpstreamError
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.upstream.convert import tool_result_from_mcp

__all__ = ["RemoteGateway", "RemoteOptions"]

MAX_PAGES = 100
NO_APPROVER = (
    "the host has no approver credential, and the rule does not name 'caller' among its "
    "approvers: pass approver_token= (a token of an approver the rule names) to from_url, or "
    "decide the call on the approvals page, the CLI or the REST API"
)
_T = TypeVar("_T")


def _tool_def(tool: types.Tool) -> ToolDef:
    annotations = (
        tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
    )
    meta = tool.meta or {}
    return ToolDef(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=annotations,
        server=str(meta.get("lockgate/server", "")),
    )


class RemoteOptions(TypedDict, total=False):
    """How an adapter's ``from_url`` reaches the gateway: the `RemoteGateway` arguments."""

    token: str | None
    approver_token: str | None
    mode: str
    timeout: float
    as_task: bool


class RemoteGateway:
    """A gateway reached over HTTP, acting for the agent whose ``token`` it sends.

    Use as an async context manager (re-entrant: nested entries share one MCP session). Tools are
    listed and called over MCP (``{url}/mcp``, in ``mode`` ``auto`` or ``legacy``); decisions and
    external results go to the REST API with ``approver_token`` (an agent token cannot decide).

    Args:
        url: The gateway's base URL (``http://127.0.0.1:8765``) or its ``/mcp`` URL.
        token: The agent's bearer token, when the gateway requires one.
        approver_token: An approver (or, for results only, worker) token, when the host decides.
        mode: The MCP client mode: ``auto`` (2026-07-28 when offered) or ``legacy``.
        timeout: Seconds for each MCP request and REST call (a held call lasts up to the rule's
            ``hold``; keep this above it).
        as_task: Ask for tasks when the gateway offers them: a held call is answered at once,
            naming its task, and its outcome is read from the task (`_remote_tasks`).
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        approver_token: str | None = None,
        mode: str = "auto",
        timeout: float = 120.0,
        as_task: bool = False,
    ) -> None:
        base = url.rstrip("/").removesuffix("/mcp")
        self.mcp_url = f"{base}/mcp"
        self.api_url = f"{base}/api"
        self._token = token
        self._approver_token = approver_token
        self._mode = mode
        self._timeout = timeout
        self._tasks = RemoteTasks(timeout) if as_task else None
        self._entered = 0
        self._stack: contextlib.AsyncExitStack | None = None
        self._client: Client | None = None
        self._session_stack: contextlib.AsyncExitStack | None = None
        self._http: httpx2.AsyncClient | None = None
        self._api: httpx2.AsyncClient | None = None
        self._gone = False

    async def __aenter__(self) -> Self:
        self._entered += 1
        if self._entered > 1:
            return self
        try:
            async with contextlib.AsyncExitStack() as stack:
                headers = {"Authorization": f"Bearer {self._token}"} if self._token else None
                timeout = httpx2.Timeout(30, read=self._timeout)
                http = create_mcp_http_client(headers=headers, timeout=timeout)
                http.event_hooks["response"].append(self._watch)
                self._http = await stack.enter_async_context(http)
                self._api = await stack.enter_async_context(httpx2.AsyncClient(timeout=timeout))
                await self._open_session()
                stack.push_async_callback(self._close_session)
                self._stack = stack.pop_all()
        except BaseException:
            self._entered -= 1
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._entered -= 1
        if self._entered == 0 and self._stack is not None:
            stack, self._stack, self._api, self._http = self._stack, None, None, None
            await stack.aclose()

    async def _open_session(self) -> None:
        """Open the MCP session (a new one after the gateway forgot the last)."""
        if self._http is None:
            raise UpstreamError("RemoteGateway is not open: use 'async with'")
        async with contextlib.AsyncExitStack() as stack:
            target = streamable_http_client(self.mcp_url, http_client=self._http)
            client = Client(target, mode=self._mode, read_timeout_seconds=self._timeout)
            self._client = await stack.enter_async_context(client)
            self._session_stack = stack.pop_all()

    async def _close_session(self) -> None:
        stack, self._session_stack, self._client = self._session_stack, None, None
        if stack is not None:
            await stack.aclose()

    async def _watch(self, response: httpx2.Response) -> None:
        """A 404 to a request naming our session: the gateway restarted and forgot it."""
        if response.status_code == 404 and "mcp-session-id" in response.request.headers:
            self._gone = True

    async def _mcp_request(self, request: Callable[[Client], Awaitable[_T]]) -> _T:
        """Run ``request`` on the session; one the gateway refused because it forgot the
        session (HTTP 404: never delivered) is sent once more on a new session."""
        self._gone = False
        try:
            return await request(self._mcp())
        except MCPError:
            if not self._gone:
                raise
        await self._close_session()
        await self._open_session()
        return await request(self._mcp())

    @property
    def protocol_version(self) -> str:
        """The MCP protocol version negotiated with the gateway."""
        return self._mcp().protocol_version

    def _mcp(self) -> Client:
        if self._client is None:
            raise UpstreamError("RemoteGateway is not open: use 'async with'")
        return self._client

    async def list_tools(self) -> dict[str, ToolDef]:
        tools: dict[str, ToolDef] = {}
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await self._mcp_request(lambda client: client.list_tools(cursor=cursor))
            tools.update({tool.name: _tool_def(tool) for tool in page.tools})
            if (cursor := page.next_cursor) is None:
                break
        return tools

    async def call_tool(
        self, name: str, args: Mapping[str, Any], *, max_hold: float | None = None
    ) -> ToolResult:
        meta = None if max_hold is None else cast(types.RequestParamsMeta, {HOLD_META: max_hold})
        tasks = self._tasks

        async def call(client: Client) -> ToolResult:
            if tasks is not None and tasks_offered(client):
                return await tasks.call(client, name, args, meta)
            return tool_result_from_mcp(await client.call_tool(name, dict(args), meta=meta))

        try:
            return await self._mcp_request(call)
        except MCPError as exc:
            if exc.code == types.INVALID_PARAMS and "Unknown tool" in exc.error.message:
                raise ToolNotFoundError(name) from None
            raise

    async def describe(self, held: HeldCall) -> HeldCall:
        if self._approver_token is None or self._api is None:
            return held
        response = await self._api.get(
            f"{self.api_url}/approvals/{held.id}", headers=self._auth(self._approver_token)
        )
        if response.status_code != 200:
            return held
        body = response.json()
        return HeldCall(
            id=held.id,
            kind=held.kind,
            state=str(body.get("state", held.state)),
            rule_id=body.get("rule_id"),
            reason=body.get("reason"),
            task_id=held.task_id,
        )

    async def interrupt_request(
        self, held: HeldCall, name: str, args: Mapping[str, Any], *, note: str | None = None
    ) -> dict[str, Any]:
        if self._approver_token is None or self._api is None:
            return minimal_interrupt_request(held, name, args, note=note)
        response = await self._api.get(
            f"{self.api_url}/approvals/{held.id}",
            params={"format": "langgraph"},
            headers=self._auth(self._approver_token),
        )
        if response.status_code != 200:
            return minimal_interrupt_request(held, name, args, note=note)
        request: dict[str, Any] = response.json()
        return noted(request, note)

    async def decide(self, id: str, decision: HostDecision) -> None:
        body: dict[str, Any] = {"decision": decision.kind}
        if decision.message is not None:
            body["message"] = decision.message
        if decision.args is not None:
            body["args"] = dict(decision.args)
        if self._approver_token is None:  # the agent decides as the caller, if the rule says so
            await self._post(f"approvals/{id}/caller-decision", body, token=self._token)
        else:
            await self._post(f"approvals/{id}/decision", body)

    async def post_result(self, id: str, *, value: Any = None, error: str | None = None) -> None:
        body = {"error": error} if error is not None else {"value": value}
        if self._approver_token is None:
            raise CannotDecide("no worker or approver token (approver_token=): workers post it")
        await self._post(f"calls/{id}/result", body)

    async def task_result(self, task_id: str, *, timeout: float) -> ToolResult | None:
        tasks = self._tasks or RemoteTasks(self._timeout)
        return await tasks.outcome(self._mcp(), task_id, timeout=timeout)

    @staticmethod
    def _auth(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}", "X-Lockgate-Channel": "host"}

    async def _post(self, path: str, body: dict[str, Any], *, token: str | None = None) -> None:
        token = token or self._approver_token
        if token is None:
            raise CannotDecide(f"{path}: {NO_APPROVER}")
        if self._api is None:
            raise UpstreamError("RemoteGateway is not open: use 'async with'")
        response = await self._api.post(
            f"{self.api_url}/{path}", json=body, headers=self._auth(token)
        )
        status = response.status_code
        if status in {401, 403}:
            fix = f"; {NO_APPROVER}" if token != self._approver_token else ""
            raise CannotDecide(f"{path}: {status} {_detail(response)}{fix}")
        if status == 409:
            return  # decided elsewhere first (or expired): re-issuing the call reports that
        if status >= 400:
            raise DecisionRejected(f"{path}: {status} {_detail(response)}")


def _detail(response: httpx2.Response) -> str:
    try:
        return str(response.json().get("detail", ""))
    except ValueError:
        return response.text[:200]
