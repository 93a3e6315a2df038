"""``/api/console/...``: the operator console's read-only REST API, one route per section.

Operators are approvers with the role ``operator`` (``auth.approvers[].roles``, or a JWT
approver whose roles hold it): an agent, worker or subscriber token is refused (403), and so is
an approver without the role. Each section reads the running gateway and changes nothing:

- ``GET  /api/console/upstreams``: status, transport, era, tools, reconnects, last error and
  quarantined definitions of every upstream;
- ``GET  /api/console/catalogue?principal=ID&roles=a,b``: the tools that principal is listed
  (a server reached over each caller's own connection as last known, with a ``note``: the
  console never opens a connection with a principal's credentials);
- ``GET  /api/console/policies``: the policy version and its layered files;
- ``POST /api/console/explain``: one call explained (a ``policies.cases.CallSpec`` body);
- ``POST /api/console/replay``: a candidate policy replayed against the recorded calls of the
  operator's tenant;
- ``GET  /api/console/events``: the live event stream of the operator's tenant (SSE);
- ``GET  /api/console/audit?limit=N`` and ``GET /api/console/audit/verify``;
- ``GET  /api/console/sessions``: the sessions of the operator's tenant (every replica's with
  PostgreSQL), with labels and gates.

Grants are listed by ``/api/grants``; accepting pins and revoking grants stay the approvals
page's actions, audited as they are there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.api.console_audit import ReplayBody, audit_tail, audit_verify, replay_candidate
from gateway.api.console_upstreams import UpstreamHistory, upstream_rows
from gateway.api.console_views import catalogue_for, explained, policy_layers, session_rows
from gateway.api.errors import BadRequest, read_json
from gateway.api.event_scopes import Visible, subscriber_scope
from gateway.api.event_stream import events_endpoint
from gateway.gateway import Gateway
from policies.cases import CallSpec
from toolsets.context import Principal

__all__ = ["OPERATOR_ROLE", "console_routes", "is_operator"]

OPERATOR_ROLE = "operator"

Handler = Callable[[Request, Principal], Awaitable[Response]]
Endpoint = Callable[[Request], Awaitable[Response]]
Guard = Callable[[Handler], Endpoint]
Approver = Callable[[Request], Awaitable[Principal | None]]
"""The approver a request's token holds, or None."""


def is_operator(who: Principal) -> bool:
    """Whether ``who`` (an approver) may read the console."""
    return OPERATOR_ROLE in who.roles


def _not_operator(who: Principal) -> JSONResponse:
    detail = (
        f"{who.id} is an approver without the role {OPERATOR_ROLE!r}: the console is for "
        "operators (give the approver that role in auth.approvers[].roles)"
    )
    return JSONResponse({"error": "forbidden", "detail": detail}, status_code=403)


def operators_only(handler: Handler) -> Handler:
    """``handler`` for operators; 403 for any other approver."""

    async def guarded(request: Request, who: Principal) -> Response:
        if not is_operator(who):
            return _not_operator(who)
        return await handler(request, who)

    return guarded


def _limit(raw: str | None) -> int:
    try:
        return max(min(int(raw or "50"), 500), 1)
    except ValueError:
        raise BadRequest(f"limit must be an integer, not {raw!r}") from None


class _Console:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.history = UpstreamHistory(gateway)

    async def upstreams(self, request: Request, who: Principal) -> Response:
        return JSONResponse({"items": await upstream_rows(self.gateway, self.history)})

    async def catalogue(self, request: Request, who: Principal) -> Response:
        query = request.query_params
        principal_id = query.get("principal", "").strip()
        if not principal_id:
            raise BadRequest("the query parameter principal is required (e.g. agent:bot)")
        roles = frozenset(r.strip() for r in query.get("roles", "").split(",") if r.strip())
        principal = Principal(id=principal_id, roles=roles, tenant=who.tenant)
        tools = await catalogue_for(self.gateway, principal)
        body: dict[str, Any] = {"principal": principal_id, "roles": sorted(roles), "items": tools}
        pooled = [s.name for s in self.gateway.config.enabled_servers() if s.per_principal_sessions]
        if pooled:  # listing as someone must not connect with their credentials
            body["note"] = (
                f"{', '.join(map(repr, pooled))}: each caller's own connection; shown as last "
                f"known for {principal_id} (their own catalogue where it differed, else the "
                "common one): the console opens no connection as them"
            )
        return JSONResponse(body)

    async def policies(self, request: Request, who: Principal) -> Response:
        return JSONResponse(policy_layers(self.gateway))

    async def explain(self, request: Request, who: Principal) -> Response:
        call = CallSpec.model_validate(await read_json(request))
        return JSONResponse(explained(self.gateway.policy.current, call))

    async def replay(self, request: Request, who: Principal) -> Response:
        body = ReplayBody.model_validate(await read_json(request))
        return JSONResponse(await replay_candidate(self.gateway, body, who.tenant))

    async def audit(self, request: Request, who: Principal) -> Response:
        count = _limit(request.query_params.get("limit"))
        return JSONResponse({"items": await audit_tail(self.gateway, who.tenant, count)})

    async def verify(self, request: Request, who: Principal) -> Response:
        return JSONResponse(await audit_verify(self.gateway))

    async def sessions(self, request: Request, who: Principal) -> Response:
        return JSONResponse({"items": await session_rows(self.gateway, who.tenant)})


def _events(
    gateway: Gateway, approver: Approver, refused: Callable[[Request], Response]
) -> Endpoint:
    """The event stream for operators: every event of their tenant (``?types=`` filters)."""

    async def scope(request: Request) -> Visible | bool:
        who = await approver(request)
        return who is not None and is_operator(who) and subscriber_scope(None, who.tenant)

    stream = events_endpoint(gateway.parts.events.stream, scope, refused=refused)

    async def endpoint(request: Request) -> Response:
        who = await approver(request)
        if who is not None and not is_operator(who):
            return _not_operator(who)
        return await stream(request)

    return endpoint


def console_routes(
    gateway: Gateway, guard: Guard, approver: Approver, refused: Callable[[Request], Response]
) -> list[BaseRoute]:
    """The console's routes: ``guard`` lets approvers in (then only operators pass),
    ``approver`` names a request's approver, ``refused`` answers a request without one."""
    console = _Console(gateway)

    def route(path: str, handler: Handler, method: str = "GET") -> Route:
        return Route(f"/api/console/{path}", guard(operators_only(handler)), methods=[method])

    return [
        route("upstreams", console.upstreams),
        route("catalogue", console.catalogue),
        route("policies", console.policies),
        route("explain", console.explain, "POST"),
        route("replay", console.replay, "POST"),
        route("audit", console.audit),
        route("audit/verify", console.verify),
        route("sessions", console.sessions),
        Route("/api/console/events", _events(gateway, approver, refused), methods=["GET"]),
    ]
