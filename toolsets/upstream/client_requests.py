"""`UpstreamRequests`: one upstream's requests to the client and its log messages, attributed
to the call in progress and handed to that call's downstream client.

An upstream session is shared by every downstream client, so a request it sends
(``elicitation/create``, ``sampling/createMessage``, ``roots/list``) must be attributed to a
call before anyone is asked:

- a 2026-07-28 server asks inside its answer to the call (``InputRequiredResult``), which the
  calling task itself drives: the request belongs to that call (`calling` marks the task);
- a 2025-11-25 server sends a request of its own, which does not say what it is about. Over
  streamable HTTP it comes on the call's own response stream, and the SDK dispatches it with
  the context of the task that sent the call: it belongs to that call. Otherwise (stdio, SSE,
  the standalone stream) it belongs to the calls in progress on this server if they all come
  from one downstream client (`client_identity`); with several clients' calls in progress, or
  none, it is refused.

The server is told of a capability only if its config relays the request (``client_requests``),
so a server that checks asks for no other (its error saying a tool needs one becomes the
refusal, see `UpstreamRequests.withheld`). The client is asked only if the config relays the
request and the client declared the capability; every refusal is a JSON-RPC error naming the
capability and the reason.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Protocol, cast

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    LOG_LEVEL_META_KEY,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    ErrorData,
    LoggingLevel,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolsets.context import CallContext
from toolsets.errors import RelayRefused
from toolsets.upstream.peer import Capability, ClientPeer, capability_of, method_of, most_verbose

__all__ = [
    "REFUSED",
    "PrincipalLogHandler",
    "UpstreamLogHandler",
    "UpstreamRequests",
    "client_identity",
    "naming",
]

log = logging.getLogger("lockgate.upstream")
REFUSED = "lockgate/refused"
"""``data`` key of the error a refused request is answered with: the capability it needed."""
MAX_ROUNDS = 10
"""Rounds of ``InputRequiredResult`` answered per call before giving up (as `mcp.Client`)."""
_STATE_ONLY_DELAY = 0.05
"""Seconds before re-sending a call the server answered with state but no question."""
_METHODS: dict[Capability, str] = {
    "sampling": "sampling/createMessage",
    "elicitation": "elicitation/create",
    "roots": "roots/list",
}
"""The request each client capability answers, in a refusal's words."""
_CALLER: ContextVar[tuple[UpstreamRequests, CallContext] | None] = ContextVar(
    "lockgate_upstream_caller", default=None
)


class UpstreamLogHandler(Protocol):
    """Receives an upstream's log message, with the peers of the calls in progress on it."""

    async def __call__(
        self,
        server: str,
        params: types.LoggingMessageNotificationParams,
        peers: Sequence[ClientPeer],
    ) -> None: ...


class PrincipalLogHandler(Protocol):
    """An `UpstreamLogHandler` also told whose own session the message came from: a
    `toolsets.upstream.per_principal.principal_key`, None for a session every caller shares."""

    async def __call__(
        self,
        server: str,
        params: types.LoggingMessageNotificationParams,
        peers: Sequence[ClientPeer],
        principal: str | None = None,
    ) -> None: ...


def naming(handler: PrincipalLogHandler, principal: str) -> UpstreamLogHandler:
    """``handler`` for the log messages of ``principal``'s own session."""

    async def relay(
        server: str, params: types.LoggingMessageNotificationParams, peers: Sequence[ClientPeer]
    ) -> None:
        await handler(server, params, peers, principal=principal)

    return relay


def client_identity(ctx: CallContext) -> str:
    """Who made the call, as far as relaying goes: a 2025-11-25 session (any of its requests
    carries its back-channel), or the one call of a 2026-07-28 client (only that request's
    answer can carry a question; two calls of one principal may be two processes)."""
    if ctx.client.era == "modern":
        return f"call\x1f{ctx.call_id}"
    return f"session\x1f{ctx.principal.id}\x1f{ctx.session_id or ''}"


class UpstreamRequests:
    """Requests and log messages of the upstream ``server`` (see the module docstring).

    Args:
        server: The server's name, in every refusal.
        allowed: The requests relayed (config ``client_requests``); the others are refused.
        timeout: Seconds the calling client has to answer one request.
        on_log: Receives the server's log messages.
    """

    def __init__(
        self,
        server: str,
        *,
        allowed: frozenset[Capability] = frozenset(),
        timeout: float = 60.0,
        on_log: UpstreamLogHandler | None = None,
    ) -> None:
        self.server = server
        self.allowed = allowed
        self.timeout = timeout
        self.on_log = on_log
        """Receives the server's log messages (the gateway's log relay)."""
        self._calls: dict[int, CallContext] = {}
        self._ids = itertools.count()
        self.log_level: LoggingLevel | None = None
        """The level the server's log messages are wanted at (the most verbose any
        downstream session asked); set by the gateway."""

    @contextlib.contextmanager
    def calling(self, ctx: CallContext) -> Iterator[None]:
        """Within: ``ctx``'s call is in progress on the server."""
        key = next(self._ids)
        self._calls[key] = ctx
        token = _CALLER.set((self, ctx))
        try:
            yield
        finally:
            _CALLER.reset(token)
            del self._calls[key]

    def callbacks(self) -> dict[str, Any]:
        """The `mcp.Client` callbacks that bring the server's requests and log messages here:
        one per relayed request only, since the SDK declares a capability (in ``initialize``
        and in each 2026-07-28 request's ``_meta``) exactly when its callback is given."""
        relayed = {
            "sampling": ("sampling_callback", self._sampling),
            "elicitation": ("elicitation_callback", self._elicitation),
            "roots": ("list_roots_callback", self._roots),
        }
        given = dict(relayed[capability] for capability in sorted(self.allowed))
        return {**given, "logging_callback": self._logging}

    def withheld(self, error: ErrorData) -> RelayRefused | None:
        """The refusal behind ``error`` when it is the server saying a tool needs a client
        capability this gateway does not declare to it (``client_requests`` in its config)."""
        if error.code != MISSING_REQUIRED_CLIENT_CAPABILITY or not isinstance(error.data, dict):
            return None
        required = error.data.get("requiredCapabilities")
        wanted = [c for c in _METHODS if isinstance(required, dict) and c in required]
        missing = [capability for capability in wanted if capability not in self.allowed]
        if not missing:
            return None
        return RelayRefused(self.server, _METHODS[missing[0]], _not_enabled(missing[0]))

    @staticmethod
    def streams(ctx: CallContext) -> bool:
        """Whether the call's log messages go to its request (so they must arrive through the
        session, in order with the result, not around it)."""
        return ctx.peer is not None and ctx.peer.log_level is not None

    def call_meta(
        self, ctx: CallContext, protocol_version: str | None
    ) -> types.RequestParamsMeta | None:
        """The ``_meta`` of a call to a 2026-07-28 server: its per-request log level opt-in."""
        if protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return None
        peer_level = ctx.peer.log_level if ctx.peer is not None else None
        level = most_verbose((self.log_level, peer_level))
        if level is None:
            return None
        return cast(types.RequestParamsMeta, {LOG_LEVEL_META_KEY: level})

    async def apply_log_level(self, client: Client | None) -> None:
        """Tell a 2025-11-25 server the level its log messages are wanted at (a 2026-07-28
        server is told with each call, see `call_meta`); a refusal is logged."""
        level = self.log_level
        if client is None or level is None or client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        if client.server_capabilities.logging is None:
            return
        request = types.SetLevelRequest(params=types.SetLevelRequestParams(level=level))
        try:
            with anyio.fail_after(self.timeout):
                await client.session.send_request(request, types.EmptyResult)
        except TimeoutError:
            log.warning("upstream %s: logging/setLevel %s got no answer", self.server, level)
        except (MCPError, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            log.warning("upstream %s: logging/setLevel %s failed: %s", self.server, level, exc)

    async def answer(self, request: types.InputRequest) -> types.InputResponse | ErrorData:
        """The calling client's answer to ``request``, or the error the server gets instead."""
        try:
            return await self._ask(request)
        except RelayRefused as exc:  # a peer's refusal names no server: this one's
            refused = exc if exc.server else RelayRefused(self.server, exc.method, exc.reason)
            data = {REFUSED: capability_of(request)}
            return ErrorData(code=INVALID_REQUEST, message=str(refused), data=data)
        except MCPError as exc:  # the client's own error, relayed as it is
            return exc.error

    async def _ask(self, request: types.InputRequest) -> types.InputResponse:
        capability, method = capability_of(request), method_of(request)
        if capability not in self.allowed:
            raise RelayRefused(self.server, method, _not_enabled(capability))
        ctx = self._attribute(method)
        if ctx.client.transport == "inprocess":
            reason = "the call in progress was made in-process, so there is no client to ask"
            raise RelayRefused(self.server, method, reason)
        if not ctx.client.declares(capability):
            reason = f"the calling client did not declare the {capability} capability"
            raise RelayRefused(self.server, method, reason)
        if ctx.peer is None:  # never expected: the faces give such calls a peer
            reason = "the calling client cannot be reached from this call"
            raise RelayRefused(self.server, method, reason)
        with anyio.move_on_after(self.timeout):
            return await ctx.peer.request(request)
        reason = f"the calling client did not answer within {self.timeout:g} s"
        raise RelayRefused(self.server, method, reason)

    def _attribute(self, method: str) -> CallContext:
        """The call ``method`` belongs to (see the module docstring)."""
        current = _CALLER.get()
        if current is not None and current[0] is self:
            return current[1]  # asked inside the call's own answer (2026-07-28)
        calls = list(self._calls.values())
        if not calls:
            reason = (
                "no call to this server is in progress, so there is no client to ask "
                "(lockgate relays such requests only to the client whose call is in progress)"
            )
            raise RelayRefused(self.server, method, reason)
        if len({client_identity(ctx) for ctx in calls}) > 1:
            reason = (
                "calls of several clients to this server are in progress and the request does "
                "not say which call it belongs to (a 2025-11-25 server), so nobody is asked"
            )
            raise RelayRefused(self.server, method, reason)
        return next((ctx for ctx in calls if ctx.peer is not None), calls[0])

    async def settle(
        self,
        raw: dict[str, Any],
        resend: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """Answer a 2026-07-28 server's questions on a call (as `mcp.Client` does) until the
        call completes; ``resend`` sends the call again with the given extra params.

        Raises:
            MCPError: a question was refused or answered with an error, or the server kept
                asking for more than `MAX_ROUNDS` rounds.
        """
        for _ in range(MAX_ROUNDS):
            if raw.get("resultType") != "input_required":
                return raw
            asked = types.InputRequiredResult.model_validate(raw, by_name=False)
            answers = await self._answer_all(asked.input_requests or {})
            extra: dict[str, Any] = {"inputResponses": answers} if answers else {}
            if asked.request_state is not None:
                extra["requestState"] = asked.request_state
            if not answers:
                await anyio.sleep(_STATE_ONLY_DELAY)  # a server asking us to poll
            raw = await resend(extra)
        if raw.get("resultType") != "input_required":
            return raw
        message = f"Server {self.server!r} kept asking for input for {MAX_ROUNDS} rounds."
        raise MCPError(code=INTERNAL_ERROR, message=message)

    async def _answer_all(self, requests: Mapping[str, types.InputRequest]) -> dict[str, Any]:
        """Every question answered (concurrently) as wire JSON; the first refusal raises."""
        answers: dict[str, Any] = {}
        refused: list[ErrorData] = []

        async def one(key: str, request: types.InputRequest) -> None:
            answer = await self.answer(request)
            if isinstance(answer, ErrorData):
                refused.append(answer)
                tg.cancel_scope.cancel()
            else:
                answers[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)

        async with anyio.create_task_group() as tg:
            for key, request in requests.items():
                tg.start_soon(one, key, request)
        if refused:
            raise MCPError.from_error_data(refused[0])
        return answers

    async def _sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | ErrorData:
        answer = await self.answer(types.CreateMessageRequest(params=params))
        if isinstance(answer, types.ElicitResult | types.ListRootsResult):
            return _mismatch(answer)
        return answer

    async def _elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | ErrorData:
        answer = await self.answer(types.ElicitRequest(params=params))
        if isinstance(answer, types.ElicitResult | ErrorData):
            return answer
        return _mismatch(answer)

    async def _roots(self, context: ClientRequestContext) -> types.ListRootsResult | ErrorData:
        answer = await self.answer(types.ListRootsRequest())
        if isinstance(answer, types.ListRootsResult | ErrorData):
            return answer
        return _mismatch(answer)

    async def _logging(self, params: types.LoggingMessageNotificationParams) -> None:
        if self.on_log is None:
            return
        current = _CALLER.get()
        own = current is not None and current[0] is self
        calls = [current[1]] if current is not None and own else list(self._calls.values())
        peers: dict[str, ClientPeer] = {}
        for ctx in calls:
            if ctx.peer is not None and ctx.peer.log_level is not None:
                peers.setdefault(client_identity(ctx), ctx.peer)
        await self.on_log(self.server, params, list(peers.values()))


def _not_enabled(capability: Capability) -> str:
    """Why a request needing ``capability`` is refused when the config does not relay it."""
    return f"{capability} is not enabled for this server (client_requests in its config)"


def _mismatch(answer: types.InputResponse) -> ErrorData:
    """A peer's answer of the wrong kind (never expected: peers validate by request)."""
    return ErrorData(code=INTERNAL_ERROR, message=f"unexpected answer {type(answer).__name__}")
