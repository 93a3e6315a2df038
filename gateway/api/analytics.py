"""``GET /api/analytics/approvals``: approval analytics and grant suggestions, for approvers.

Figures (`gateway.approvals.analytics`) over the approvals the approver may see, held in the
window; ``?since=`` is a duration back from now (``24h``, ``7d``; default 7 days), an ISO 8601
time or unix seconds. ``suggestions`` (`gateway.approvals.suggestions`): patterns approved every
time in the window, at least ``?min_approvals=`` times (default 5), each with its policy snippet.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.api.errors import BadRequest
from gateway.approvals.analytics import DEFAULT_WINDOW, approval_stats, read_window
from gateway.approvals.suggestions import DEFAULT_MIN_APPROVALS, suggest
from gateway.gateway import Gateway
from policies.durations import parse_duration
from toolsets.context import Principal

__all__ = ["analytics_routes", "window_start"]

Handler = Callable[[Request, Principal], Awaitable[Response]]
Guard = Callable[[Handler], Callable[[Request], Awaitable[Response]]]


def window_start(raw: str | None, now: float) -> float:
    """Unix seconds where the window opens: ``raw`` as a duration back from ``now``, an ISO
    8601 time, or unix seconds; the default window when absent.

    Raises:
        BadRequest: ``raw`` is none of these.
    """
    if not raw:
        return now - DEFAULT_WINDOW
    try:
        return now - parse_duration(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise BadRequest(
            f"since: {raw!r} is not a duration ('24h', '7d'), an ISO 8601 time or unix seconds"
        ) from None


def _min_approvals(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_MIN_APPROVALS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise BadRequest(f"min_approvals must be a whole number >= 1, not {raw!r}")
    return value


class _Analytics:
    def __init__(self, gateway: Gateway) -> None:
        self.store = gateway.store

    async def approvals(self, request: Request, who: Principal) -> Response:
        query = request.query_params
        least = _min_approvals(query.get("min_approvals"))
        await self.store.sweep_expired()  # an overdue call counts as expired, not waiting
        now = self.store.now()
        since = window_start(query.get("since"), now)
        calls, waiting = await read_window(self.store, who, since=since, now=now)
        stats = approval_stats(calls, waiting=waiting, since=since, until=now)
        found = suggest(calls, min_approvals=least)
        stats["suggestions"] = [s.to_json() for s in found]
        return JSONResponse(stats)


def analytics_routes(gateway: Gateway, guard: Guard) -> list[BaseRoute]:
    """The analytics routes; ``guard`` lets approvers in."""
    analytics = _Analytics(gateway)
    return [Route("/api/analytics/approvals", guard(analytics.approvals), methods=["GET"])]
