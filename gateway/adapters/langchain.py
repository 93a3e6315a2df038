"""The gateway's tools as LangChain tools; held calls pause a LangGraph graph with ``interrupt()``.

Install with ``pip install 'lockgate[langchain]'``. Build a `GatewayToolkit` from a running
gateway in this process (`GatewayToolkit.from_gateway`) or from a gateway's URL
(`GatewayToolkit.from_url`), open it (``async with`` or ``with``) and take its tools
(``await toolkit.aget_tools()`` or ``toolkit.get_tools()``). Each is a LangChain ``BaseTool``
with the gateway's name, description and JSON schema (passed whole: nested objects, enums);
its result is ``content_and_artifact``: the text for the model, and the structured content.
Tool errors, denials and refusals reach the model as the tool's error text.

Held calls: inside a LangGraph node (a ``ToolNode`` or your own), a call the gateway holds for
approval pauses the graph with ``interrupt()`` carrying LangGraph's human-in-the-loop request
(``action_request``, ``config`` from the rule's decisions, ``description`` with the rule's
reason and the approval id, and ``lockgate.approval_id``). Resume with
``Command(resume={"type": "accept" | "edit" | "response" | "ignore", "args": ...})`` or a
``HumanInTheLoopMiddleware`` decision (``approve``, ``edit``, ``reject``); see
`gateway.adapters._review` for what happens then. The approvals page, the CLI and the REST API
see and may decide the same pending call meanwhile; resuming then returns their outcome, and the
call never runs twice. Outside a graph a held call is answered "pending", as over MCP.

Deciding needs a credential where the rule's approvers do not include ``caller``: ``approver=``
in process, ``approver_token=`` remotely. Where the rule names ``caller``, a host without one
decides as the calling agent (its ``principal`` or ``token``).

In a LangChain 1.x ``create_agent`` agent, `gateway.adapters.middleware.LockgateMiddleware`
asks about all the held calls of a model turn in one interrupt, in ``HumanInTheLoopMiddleware``'s
shape; in a plain LangGraph graph its ``tool_node(tools)`` and ``review_node()`` do the same.
In a plain ``ToolNode(tools)`` each held call is asked on its own, in the shape above (a
``ToolNode`` has no step after all of a message's calls, and re-runs them all on resume: see
docs/approvals.md).

Sync use (``tool.invoke``, ``graph.invoke``) runs the gateway's calls through an anyio blocking
portal: the toolkit's own when opened with ``with`` (remote gateways), or the ``portal=`` the
in-process gateway runs in.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, Literal, Self, TypeVar, Unpack

from anyio.from_thread import BlockingPortal, start_blocking_portal
from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.tools import BaseTool, ToolException
from pydantic import ConfigDict, SkipValidation

from gateway.adapters._client import GatewayClient, InProcessGateway, result_text
from gateway.adapters._langgraph_compat import current_task, in_graph, interrupt
from gateway.adapters._remote import RemoteGateway, RemoteOptions
from gateway.adapters._review import DEFERRED, Ask, Deferred, call_deferred, call_reviewed
from gateway.adapters._turn_order import Turn
from gateway.gateway import Gateway
from toolsets.context import ANONYMOUS, Principal
from toolsets.errors import ToolNotFoundError
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["GatewayTool", "GatewayToolkit"]

T = TypeVar("T")


class GatewayTool(BaseTool):
    """One gateway tool as a LangChain tool (made by `GatewayToolkit`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    toolkit: SkipValidation[GatewayToolkit]
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    handle_tool_error: bool = True

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        # The arguments travel as one dict: a tool argument may be called ``run_manager``.
        # The tool call's id orders the held calls of a ToolNode task (`_turn_order`).
        parsed = self._parse_input(tool_input, tool_call_id)
        return (parsed if isinstance(parsed, dict) else {},), {"call_id": tool_call_id}

    def _run(
        self,
        args: dict[str, Any],
        call_id: str | None = None,
        run_manager: CallbackManagerForToolRun | None = None,
    ) -> tuple[str, Any]:
        # interrupt() reads this thread's LangGraph context; the call runs in the portal's loop.
        context = contextvars.copy_context()
        ask: Ask | None = (lambda request: context.run(interrupt, request)) if in_graph() else None
        return self.toolkit.blocking(self._call(args, ask, DEFERRED.get(), self._turn(call_id)))

    async def _arun(
        self,
        args: dict[str, Any],
        call_id: str | None = None,
        run_manager: AsyncCallbackManagerForToolRun | None = None,
    ) -> tuple[str, Any]:
        ask = interrupt if in_graph() else None
        return await self._call(args, ask, DEFERRED.get(), self._turn(call_id))

    def _turn(self, call_id: str | None) -> Turn | None:
        # Read here, in the graph's context (a sync call then runs in the portal's loop).
        return Turn(current_task(self.toolkit.names), call_id) if call_id else None

    async def _call(
        self,
        args: dict[str, Any],
        ask: Ask | None,
        deferred: list[Deferred] | None,
        turn: Turn | None = None,
    ) -> tuple[str, Any]:
        client = self.toolkit.client
        try:
            if deferred is not None:  # the lockgate middleware asks about the turn's holds
                result = await call_deferred(client, self.name, args, deferred)
            else:
                result = await call_reviewed(client, self.name, args, ask, turn)
        except ToolNotFoundError as exc:  # hidden or removed since the model saw the list
            raise ToolException(str(exc)) from None
        return _content(result)


def _content(result: ToolResult) -> tuple[str, Any]:
    if result.is_error:
        raise ToolException(result_text(result))
    return result_text(result), result.structured_content


class GatewayToolkit:
    """A lockgate gateway's tools for LangChain and LangGraph (see the module docs).

    Args:
        client: The gateway backend (`InProcessGateway` or `RemoteGateway`).
        portal: Where sync calls run: the blocking portal of the event loop the client lives in.
    """

    def __init__(self, client: GatewayClient, *, portal: BlockingPortal | None = None) -> None:
        self.client = client
        self.portal = portal
        self._own_portal: contextlib.ExitStack | None = None
        self.names: set[str] = set()  # the tools made so far (their held calls take turns)

    @classmethod
    def from_gateway(
        cls,
        gateway: Gateway,
        *,
        principal: Principal = ANONYMOUS,
        approver: Principal | None = None,
        portal: BlockingPortal | None = None,
    ) -> GatewayToolkit:
        """Tools of a running in-process ``gateway``, called as ``principal``.

        Args:
            gateway: A started `gateway.Gateway` (the host owns its lifecycle).
            principal: Who calls the tools.
            approver: Who decides held calls for the host, if the host may decide.
            portal: The blocking portal of the gateway's event loop, for sync use.
        """
        client = InProcessGateway(
            gateway=gateway, principal=principal, approver=approver, channel="langgraph"
        )
        return cls(client, portal=portal)

    @classmethod
    def from_url(cls, url: str, **options: Unpack[RemoteOptions]) -> GatewayToolkit:
        """Tools of the gateway at ``url`` over MCP; open it with ``async with`` or ``with``.

        Args:
            url: The gateway's base URL or its ``/mcp`` URL.
            **options: ``token``, ``approver_token``, ``mode``, ``timeout`` (see
                `RemoteGateway`).
        """
        return cls(RemoteGateway(url, **options))

    async def __aenter__(self) -> Self:
        await self.client.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.client.__aexit__(exc_type, exc, tb)

    def __enter__(self) -> Self:
        """Open for sync use: starts the toolkit's own portal when none was given."""
        with contextlib.ExitStack() as stack:
            if self.portal is None:
                self.portal = stack.enter_context(start_blocking_portal())
                stack.callback(setattr, self, "portal", None)
            stack.enter_context(self.portal.wrap_async_context_manager(self.client))
            self._own_portal = stack.pop_all()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stack, self._own_portal = self._own_portal, None
        if stack is not None:
            stack.__exit__(exc_type, exc, tb)

    async def aget_tools(self) -> list[BaseTool]:
        """The tools the principal may see, as LangChain tools."""
        return [self._tool(tool) for tool in (await self.client.list_tools()).values()]

    def get_tools(self) -> list[BaseTool]:
        """`aget_tools` for sync code (needs a portal: ``with toolkit:`` or ``portal=``)."""
        return self.blocking(self.aget_tools())

    def blocking(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` in the gateway's event loop, from sync code in another thread."""
        if self.portal is None:
            coroutine.close()
            raise RuntimeError(
                "sync use of a GatewayToolkit needs a portal: open it with 'with toolkit:', "
                "pass portal= for an in-process gateway, or use the async API (ainvoke)"
            )

        async def run() -> T:
            return await coroutine

        return self.portal.call(run)

    def _tool(self, tool: ToolDef) -> GatewayTool:
        self.names.add(tool.name)
        return GatewayTool(
            name=tool.name,
            description=tool.description or tool.title or tool.name,
            args_schema=dict(tool.input_schema),
            toolkit=self,
            metadata={
                "lockgate": {
                    "server": tool.server,
                    "pin": tool.pin,
                    "title": tool.title,
                    "annotations": dict(tool.annotations or {}),
                }
            },
        )


GatewayTool.model_rebuild()
