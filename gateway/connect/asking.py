"""Sending a held call's connect link to a client that declared URL-mode elicitation, and
waiting for the user to connect.

2025-11-25: ``elicitation/create`` with ``mode: "url"`` and an ``elicitationId`` (the held
record's id) on the call's back-channel. 2026-07-28: the same request, without an id, in an
``InputRequiredResult`` (`gateway.mcp.relay.Parking` carries it; the re-sent call waits on).
The client's answer only says whether the user agreed to open the link; the connection itself
is told by the vault (`gateway.connect.gate.ConnectGate.connected`).
"""

from __future__ import annotations

import logging

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from gateway.approvals.pending import PendingCall
from gateway.approvals.store import PendingStore
from toolsets.context import CallContext
from toolsets.errors import RelayRefused

__all__ = ["ask_to_connect", "link_request"]

log = logging.getLogger("lockgate.connect")
PROGRESS_INTERVAL = 5.0
"""Seconds between progress notifications while waiting, for a client that asked for them."""


def link_request(call: PendingCall, link: str, ctx: CallContext) -> types.ElicitRequest:
    """The URL-mode elicitation carrying ``link`` (with an id for 2025-11-25 clients)."""
    message = (
        f"Connect your account for {call.server!r} to run {call.tool}: open the link, "
        "sign in and connect; the call then runs."
    )
    elicitation_id = call.id if ctx.client.era == "legacy" else None
    params = types.ElicitRequestURLParams(message=message, url=link, elicitation_id=elicitation_id)
    return types.ElicitRequest(params=params)


async def ask_to_connect(
    ctx: CallContext, store: PendingStore, call: PendingCall, link: str, *, hold: float
) -> PendingCall:
    """Send ``link`` to the caller and wait up to ``hold`` seconds for the connection; the
    record as it is then (``approved`` once connected)."""
    assert ctx.peer is not None
    deadline = anyio.current_time() + hold
    try:
        with anyio.move_on_after(hold):
            answer = await ctx.peer.request(link_request(call, link, ctx))
            if isinstance(answer, types.ElicitResult) and answer.action != "accept":
                return call  # the user would not open it: answered with the link
    except (MCPError, RelayRefused) as exc:  # answered with the link instead
        log.info("connect link for %s not sent by elicitation: %s", call.id, exc)
        return call
    step = 0
    while (remaining := deadline - anyio.current_time()) > 0 and call.state == "pending":
        wait = min(remaining, PROGRESS_INTERVAL) if ctx.progress is not None else remaining
        call = await store.wait(call.id, wait, while_in={"pending"})
        if call.state == "pending" and ctx.progress is not None:  # keeps its request alive
            step += 1
            await ctx.progress(step, None, f"waiting for you to connect {call.server!r}")
    return call
