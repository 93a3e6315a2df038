"""The REST API under ``/api``: approvals for approvers, external calls for workers, events,
and changed tool definitions for approvers (`gateway.api.pins`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.api.analytics import analytics_routes
from gateway.api.connections import connection_routes
from gateway.api.console import console_routes
from gateway.api.errors import BadRequest, error_response, read_json
from gateway.api.event_scopes import approver_scope, subscriber_scope
from gateway.api.event_stream import Visible, events_endpoint
from gateway.api.grants import GrantBody, grant_routes
from gateway.api.pins import pin_routes
from gateway.api.sessions import session_routes
from gateway.approvals.access import may_see
from gateway.approvals.context_pack import context_pack
from gateway.approvals.errors import PendingNotFound
from gateway.approvals.holding import Holding
from gateway.approvals.human_interrupt import interrupt_request, read_response
from gateway.approvals.pending import Kind, PendingCall, State
from gateway.approvals.preview import PreviewRunner
from gateway.auth.tokens import Authenticator, Identity, Role, bearer_token
from gateway.gateway import Gateway
from toolsets.context import Principal
from toolsets.errors import LockgateError

__all__ = ["DecisionBody", "ResultBody", "api_routes"]

Endpoint = Callable[[Request], Awaitable[Response]]


class DecisionBody(BaseModel):
    """``POST /api/approvals/{id}/decision``."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "deny", "edit", "respond"]
    message: str | None = Field(None, description="deny: for the model; respond: the result")
    args: dict[str, Any] | None = Field(None, description="edit: the arguments to run instead")
    grant: GrantBody | None = Field(
        None, description="approve: also allow later calls of the session or the tool"
    )
    break_glass: bool = Field(
        False, description="approve at once, skipping remaining stages (needs reason)"
    )
    reason: str | None = Field(None, description="break_glass: why it cannot wait (on record)")


class ResultBody(BaseModel):
    """``POST /api/calls/{id}/result``: a value, or an error with an optional retry hint."""

    model_config = ConfigDict(extra="forbid")

    value: Any = None
    error: str | None = None
    retry_after: float | None = Field(None, ge=0)


def _kind(value: str | None) -> Kind | None:
    if value in (None, "approval", "external", "connect"):
        return value  # type: ignore[return-value]
    raise BadRequest(f"unknown kind {value!r}")


def _states(value: str) -> list[State] | None:
    states = [s for s in value.split(",") if s]
    if unknown := [s for s in states if s not in get_args(State)]:
        raise BadRequest(f"unknown state {unknown[0]!r}")
    return states or None  # type: ignore[return-value]


API_CHANNELS = frozenset({"api", "cli", "web"})
"""What an approver's client may say it is; anything else is recorded as ``api``."""


def _channel(request: Request) -> str:
    claimed = request.headers.get("x-lockgate-channel", "api")
    return claimed if claimed in API_CHANNELS else "api"


def _langgraph(request: Request) -> bool:
    """Whether the request asked for LangGraph's interrupt shapes (``?format=langgraph``)."""
    value = request.query_params.get("format", "lockgate")
    if value not in {"lockgate", "langgraph"}:
        raise BadRequest(f"unknown format {value!r}: use 'langgraph' or leave it out")
    return value == "langgraph"


def _call_json(call: PendingCall, holding: Holding) -> dict[str, Any]:
    """A call as the API serves it: the record, and whether its caller is still waiting."""
    return {**call.to_json(), "waiting": call.id in holding}


MAX_SCANNED = 1000
"""Calls read per listing before filtering to what the caller may see."""


def _limit(raw: str) -> int:
    try:
        return max(min(int(raw), 1000), 0)
    except ValueError:
        raise BadRequest(f"limit must be an integer, not {raw!r}") from None


async def _identify(auth: Authenticator, request: Request) -> Identity:
    """What the request's bearer token is (static or JWT), judged once per request."""
    identity = getattr(request.state, "lockgate_identity", None)
    if not isinstance(identity, Identity):
        identity = await auth.identify(bearer_token(request.headers.get("authorization")))
        request.state.lockgate_identity = identity
    return identity


async def _who(auth: Authenticator, request: Request, *roles: Role) -> Principal | None:
    found = (await _identify(auth, request)).holding(*roles)
    return None if found is None else found.principal


def _refused(auth: Authenticator, request: Request, roles: tuple[Role, ...]) -> JSONResponse:
    """401 for no, an unknown or a refused token (saying why, with the OAuth resource metadata
    challenge and the scopes of ``roles``); 403 for a valid token without the role
    (``insufficient_scope`` for a JWT that a scope would give it), as `_identify` judged it."""
    identity = getattr(request.state, "lockgate_identity", None) or Identity()
    needed = " or ".join(roles)
    scopes = auth.metadata.scopes_for(*roles)
    if identity.valid:
        description = f"this token is not {'an' if needed[0] in 'aeiou' else 'a'} {needed} token"
        if identity.via_jwt and scopes:
            return auth.metadata.insufficient_scope(
                request.scope, "", description=description, scopes=scopes
            )
        return JSONResponse({"error": "forbidden", "detail": description}, status_code=403)
    description = identity.problem or f"a {needed} token is required"
    return auth.metadata.unauthorized(
        request.scope, "", presented=identity.presented, description=description, scopes=scopes
    )


def _guard(
    auth: Authenticator,
    roles: tuple[Role, ...],
    handler: Callable[[Request, Principal], Awaitable[Response]],
) -> Endpoint:
    async def endpoint(request: Request) -> Response:
        who = await _who(auth, request, *roles)
        if who is None:
            return _refused(auth, request, roles)
        try:
            return await handler(request, who)
        except (ValidationError, LockgateError) as exc:
            return error_response(exc)

    return endpoint


class _Handlers:
    """The REST handlers, bound to one gateway; each gets the authenticated principal."""

    def __init__(self, gateway: Gateway) -> None:
        self.store, self.service = gateway.store, gateway.approvals
        self.holding = gateway.parts.holding
        self.policy, self.sessions = gateway.policy, gateway.parts.sessions
        self.preview = PreviewRunner(
            gateway.call_tool, gateway.approvals.tools, gateway.parts.decider, self.sessions
        )

    async def me(self, request: Request, who: Principal) -> Response:
        """``GET /api/me``: who the token belongs to (the page says "signed in as")."""
        return JSONResponse({"id": who.id, "roles": sorted(who.roles), "tenant": who.tenant})

    async def list_calls(self, request: Request, who: Principal) -> Response:
        await self.store.sweep_expired()  # nothing overdue is offered as pending
        query = request.query_params
        default = "approval" if request.url.path.endswith("approvals") else None
        limit = _limit(query.get("limit", "100"))
        calls = await self.store.list(
            state=_states(query.get("state", "")),
            kind=_kind(query.get("kind") or default),
            principal=query.get("principal") or None,
            tool=query.get("tool") or None,
            limit=MAX_SCANNED,
        )
        mine = [c for c in calls if may_see(c, who)][:limit]
        if not _langgraph(request):
            return JSONResponse({"items": [_call_json(c, self.holding) for c in mine]})
        # An interrupt request carries the context in its description, as one call's does.
        items = [interrupt_request(c, context=await self._context(c)) for c in mine]
        return JSONResponse({"items": items})

    async def _context(self, call: PendingCall) -> dict[str, Any]:
        return await context_pack(
            call,
            tools=self.service.tools,
            engine=self.policy.current,
            session=self.sessions.ensure,
            preview=self.preview,
        )

    async def get_call(self, request: Request, who: Principal) -> Response:
        await self.store.sweep_expired()
        call = await self._visible_call(request, who)
        context = await self._context(call)
        if _langgraph(request):
            return JSONResponse(interrupt_request(call, context=context))
        return JSONResponse({**_call_json(call, self.holding), "context": context})

    async def _visible_call(self, request: Request, who: Principal) -> PendingCall:
        """The call named in the path, if ``who`` may see it (else: not found, as if absent)."""
        id = request.path_params["id"]
        call = await self.store.get(id)
        if call is None or not may_see(call, who):
            raise PendingNotFound(id)
        return call

    async def decide(self, request: Request, who: Principal) -> Response:
        await self._visible_call(request, who)
        body = await self._decision_body(request)
        call = await self.service.decide(
            request.path_params["id"],
            body.decision,
            by=who,
            channel=_channel(request),
            message=body.message,
            args=body.args,
            grant=body.grant.request() if body.grant is not None else None,
            break_glass=body.break_glass,
            reason=body.reason,
        )
        return JSONResponse(_call_json(call, self.holding))

    async def decide_as_caller(self, request: Request, who: Principal) -> Response:
        """``POST /api/approvals/{id}/caller-decision``: an agent decides its own held call,
        where the rule names ``caller`` among the approvers (a graph host resuming)."""
        id = request.path_params["id"]
        call = await self.store.get(id)
        if call is None or call.principal != who.id or call.tenant != who.tenant:
            raise PendingNotFound(id)
        body = await self._decision_body(request)
        call = await self.service.decide(
            id,
            body.decision,
            by=who,
            channel=_channel(request),
            message=body.message,
            args=body.args,
            as_caller=True,
        )
        return JSONResponse(_call_json(call, self.holding))

    async def _decision_body(self, request: Request) -> DecisionBody:
        """The decision posted: a lockgate body, or (``?format=langgraph``) a LangGraph
        response, read for the held call's tool."""
        langgraph, raw = _langgraph(request), await read_json(request)
        if not langgraph:
            return DecisionBody.model_validate(raw)
        call = await self.service.get(request.path_params["id"])
        answer = read_response(raw, action=call.tool)
        return DecisionBody(decision=answer.decision, message=answer.message, args=answer.args)

    async def post_result(self, request: Request, who: Principal) -> Response:
        await self._visible_call(request, who)
        body = ResultBody.model_validate(await read_json(request))
        call = await self.service.post_result(
            request.path_params["id"],
            by=who,
            value=body.value,
            error=body.error,
            retry_after=body.retry_after,
        )
        return JSONResponse(_call_json(call, self.holding))


_ANYONE: tuple[Role, ...] = ("approver", "subscriber", "worker")
"""Who may ask ``GET /api/me``."""


def api_routes(gateway: Gateway, auth: Authenticator) -> list[BaseRoute]:
    """Routes of the REST API, bound to ``gateway``."""
    api = _Handlers(gateway)
    approver: tuple[Role, ...] = ("approver",)
    worker: tuple[Role, ...] = ("worker", "approver")
    watchers: tuple[Role, ...] = ("subscriber", "approver")

    async def scope(request: Request) -> Visible | bool:
        """A subscriber's filter, or an approver's own calls (gateway/api/event_scopes.py)."""
        found = (await _identify(auth, request)).holding(*watchers)
        if found is None:
            return False
        who = found.principal
        if found.role == "subscriber":
            return subscriber_scope(found.events, who.tenant)
        return approver_scope(who, gateway.store, pins=gateway.pins.may_accept(who))

    events = events_endpoint(
        gateway.parts.events.stream, scope, refused=lambda r: _refused(auth, r, watchers)
    )
    return [
        Route("/api/me", _guard(auth, _ANYONE, api.me), methods=["GET"]),
        Route("/api/approvals", _guard(auth, approver, api.list_calls), methods=["GET"]),
        Route("/api/approvals/{id}", _guard(auth, approver, api.get_call), methods=["GET"]),
        Route("/api/approvals/{id}/decision", _guard(auth, approver, api.decide), methods=["POST"]),
        Route(
            "/api/approvals/{id}/caller-decision",
            _guard(auth, ("agent",), api.decide_as_caller),
            methods=["POST"],
        ),
        Route("/api/calls", _guard(auth, worker, api.list_calls), methods=["GET"]),
        Route("/api/calls/{id}", _guard(auth, worker, api.get_call), methods=["GET"]),
        Route("/api/calls/{id}/result", _guard(auth, worker, api.post_result), methods=["POST"]),
        Route("/api/events", events, methods=["GET"]),
        *_area_routes(gateway, auth),
    ]


def _area_routes(gateway: Gateway, auth: Authenticator) -> list[BaseRoute]:
    """The routes of each area with a module of its own: pins, grants, sessions, analytics,
    connections, the operator console."""
    approver: tuple[Role, ...] = ("approver",)

    def approvers(handler: Any) -> Any:
        return _guard(auth, approver, handler)

    return [
        *pin_routes(gateway, approvers),
        *grant_routes(gateway, approvers),
        *session_routes(gateway, approvers),
        *analytics_routes(gateway, approvers),
        *connection_routes(
            gateway, lambda handler: _guard(auth, ("agent", "approver"), handler), approvers
        ),
        *console_routes(
            gateway,
            approvers,
            lambda request: _who(auth, request, *approver),
            lambda request: _refused(auth, request, approver),
        ),
    ]
