"""The step-up check at the HTTP edge of ``/mcp``: a ``tools/call`` whose caller's token lacks
the scopes the policy requires of the tool is answered ``403`` with ``WWW-Authenticate: Bearer
error="insufficient_scope", scope="..."`` before the call reaches either path (the fast path
or the SDK's, whose event stream would have answered ``200`` before the chain refused).

The MCP authorization spec's step-up flow: the client asks its authorization server for a token
with the scopes the challenge names (this resource's agent scope and the tool's) and retries.
The check costs nothing while the caller holds every scope the policy requires (or the policy
requires none); otherwise the body is read (at most `MAX_BODY`) and handed on unchanged. A tool
the caller cannot see is not checked: the call goes on and is answered as an unknown tool. The
chain checks again (`toolsets.scoped.ScopedToolset`), for stdio and in-process callers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import Message, Receive, Scope

from gateway.auth.oauth_metadata import ResourceMetadata
from gateway.mcp.calls import SESSION_HEADER, session_of
from toolsets import jsonwire
from toolsets.context import CallContext, Principal
from toolsets.scoped import InsufficientScope
from toolsets.tooldef import ToolDef

__all__ = ["MAX_BODY", "ScopeSource", "StepUp", "ToolLookup"]

MAX_BODY: Final = 4 * 1024 * 1024
"""Bodies above this are not checked here (the MCP paths refuse them)."""


class ScopeSource(Protocol):
    """The scopes calls need (`policies.held_scopes.HeldScopes`)."""

    @property
    def all(self) -> frozenset[str]:
        """Every scope some rule requires."""
        ...

    def required(self, tool: ToolDef, principal: Principal) -> frozenset[str]:
        """The scopes a call of ``tool`` by ``principal`` needs."""
        ...

    def missing(self, tool: ToolDef, principal: Principal) -> Sequence[str]:
        """The scopes a call of ``tool`` needs that ``principal``'s token lacks."""
        ...


class ToolLookup(Protocol):
    """The tools visible in a context (`gateway.Gateway.tools`)."""

    async def __call__(self, ctx: CallContext | None = None) -> dict[str, ToolDef]: ...


async def _read_body(receive: Receive) -> tuple[list[Message], bytes | None]:
    """The request's messages as received, and its body (None when over `MAX_BODY`)."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        size += len(message.get("body", b""))
        if message["type"] != "http.request" or size > MAX_BODY:
            return messages, None
        if not message.get("more_body", False):
            return messages, b"".join(m.get("body", b"") for m in messages)


def _replayed(messages: list[Message], receive: Receive) -> Receive:
    """A ``receive`` that yields ``messages`` again, then the real stream."""
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


def _called(body: bytes) -> tuple[str, Mapping[str, Any] | None] | None:
    """The tool name and ``_meta`` of a ``tools/call`` request body, else None."""
    try:
        message = jsonwire.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    if not isinstance(name, str):
        return None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return name, meta if isinstance(meta, dict) else None


class StepUp:
    """The edge check (see the module docstring).

    Args:
        scopes: The scopes calls need.
        tools: The tools a caller sees.
        metadata: Builds the challenge (``resource_metadata`` included). Its agent scopes are
            named in every challenge with the tool's, so a client that replaces its scopes with
            the challenge's keeps reaching ``/mcp``.
    """

    def __init__(self, scopes: ScopeSource, tools: ToolLookup, metadata: ResourceMetadata) -> None:
        self.scopes = scopes
        self.tools = tools
        self.metadata = metadata
        self.agent_scopes = frozenset(metadata.scopes_for("agent"))

    async def check(
        self, scope: Scope, receive: Receive, principal: Principal
    ) -> tuple[Response | None, Receive]:
        """The ``403`` refusal of this request, or None; and the ``receive`` to go on with."""
        if scope["method"] != "POST" or self.scopes.all <= principal.scopes:
            return None, receive
        messages, body = await _read_body(receive)
        receive = _replayed(messages, receive)
        called = _called(body) if body is not None else None
        if called is None:
            return None, receive
        name, meta = called
        headers = Headers(scope=scope)
        session = headers.get("mcp-session-id") or headers.get(SESSION_HEADER) or session_of(meta)
        tool = (await self.tools(CallContext(principal=principal, session_id=session))).get(name)
        if tool is None or not (missing := self.scopes.missing(tool, principal)):
            return None, receive
        needed = self.agent_scopes | self.scopes.required(tool, principal)
        description = str(InsufficientScope(name, missing))
        refusal = self.metadata.insufficient_scope(
            scope, "/mcp", description=description, scopes=sorted(needed)
        )
        return refusal, receive
