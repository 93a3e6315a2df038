"""Constructors of the resource and prompt events; every one redacts before the event exists.

``resource.read`` / ``prompt.get``: a read or get the policy let through was answered (``ok``)
or failed (``error``), with a summary of what was sent (counts and sizes, never the content);
``resource.denied`` / ``prompt.denied``: the policy refused it (``message`` is what the client
reads), as ``tool.denied`` for a tool call. All carry ``call_id``, ``server``, ``principal`` (the
id), ``session_id``, ``tenant`` when there is one, the decision (``effect``, ``rule_id``, shadow
matches) and ``uri`` (credential-looking parts masked) or ``prompt`` (the exposed name) with its
``args`` masked along the decision's ``redact`` paths and ``args_sha256`` over the unmasked ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.events.model import Event
from gateway.events.redact import redact
from gateway.events.tool_events import DecisionLike, decision_data
from toolsets.canonical import sha256_hex
from toolsets.context import CallContext

__all__ = ["prompt_denied", "prompt_get", "resource_denied", "resource_read"]


def _surface_call(ctx: CallContext, server: str, subject: Mapping[str, Any]) -> dict[str, Any]:
    """What every resource and prompt event carries: ``subject`` is ``{"uri": ...}`` or
    ``{"prompt": ...}``."""
    data = {"call_id": ctx.call_id, **subject, "server": server}
    data.update(principal=ctx.principal.id, session_id=ctx.session_id)
    if ctx.principal.tenant is not None:
        data["tenant"] = ctx.principal.tenant
    return data


def resource_read(
    uri: str,
    server: str,
    ctx: CallContext,
    decision: DecisionLike,
    *,
    summary: Mapping[str, Any],
    duration_ms: float,
    error: str | None = None,
) -> Event:
    """``resource.read``: a read the policy let through was answered (``ok``) or failed
    (``error``); ``summary`` says how much was read (``contents``, ``bytes``, ``mime_types``),
    never what."""
    data = _surface_call(ctx, server, {"uri": redact(uri)})
    data.update(decision=decision_data(decision), ok=error is None, **summary)
    data.update(duration_ms=round(duration_ms, 3), error=None if error is None else redact(error))
    return Event(type="resource.read", data=data)


def resource_denied(
    uri: str, server: str, ctx: CallContext, decision: DecisionLike, message: str
) -> Event:
    """``resource.denied``: the policy refused a read; ``message`` is what the client reads."""
    data = _surface_call(ctx, server, {"uri": redact(uri)})
    data.update(decision=decision_data(decision), message=redact(message))
    return Event(type="resource.denied", data=data)


def _prompt(
    name: str, server: str, ctx: CallContext, args: Mapping[str, Any], decision: DecisionLike
) -> dict[str, Any]:
    data = _surface_call(ctx, server, {"prompt": name})
    data.update(args=redact(args, decision.redact), args_sha256=sha256_hex(args))
    data["decision"] = decision_data(decision)
    return data


def prompt_get(
    name: str,
    server: str,
    ctx: CallContext,
    args: Mapping[str, Any],
    decision: DecisionLike,
    *,
    summary: Mapping[str, Any],
    duration_ms: float,
    error: str | None = None,
) -> Event:
    """``prompt.get``: a get the policy let through was answered (``ok``) or failed
    (``error``); ``args`` are masked along the decision's ``redact`` paths; ``summary`` counts
    the ``messages``, never shows them."""
    data = _prompt(name, server, ctx, args, decision)
    data.update(ok=error is None, **summary, duration_ms=round(duration_ms, 3))
    data["error"] = None if error is None else redact(error)
    return Event(type="prompt.get", data=data)


def prompt_denied(
    name: str,
    server: str,
    ctx: CallContext,
    args: Mapping[str, Any],
    decision: DecisionLike,
    *,
    message: str,
) -> Event:
    """``prompt.denied``: the policy refused a get; ``message`` is what the client reads."""
    data = _prompt(name, server, ctx, args, decision)
    data["message"] = redact(message)
    return Event(type="prompt.denied", data=data)
