"""LangGraph's human-in-the-loop vocabulary for a held call: the interrupt request a reviewer
sees, and the responses a reviewer may give.

The request (the ``HumanInterrupt`` shape that LangGraph review UIs such as Agent Inbox read)::

    {"action_request": {"action": TOOL, "args": {...}},
     "config": {"allow_accept": bool, "allow_edit": bool, "allow_respond": bool,
                "allow_ignore": bool},
     "description": "why the call is held (approval ap_...)",
     "lockgate": {"approval_id": "ap_...", ...}}

``config`` follows the rule's ``decisions``: approve → accept, edit → edit, respond → respond,
deny → ignore. Responses are read in two vocabularies:

- the ``HumanResponse`` shape, ``{"type": "accept" | "edit" | "response" | "ignore", "args": ...}``
  (``edit``: the new arguments, or an ``{"action", "args"}`` action request; ``response``: the
  text given instead of running the tool), also as a one-element list, as Agent Inbox sends it;
- LangChain's ``HumanInTheLoopMiddleware`` decisions, ``{"type": "approve" | "edit" | "reject" |
  "respond"}`` (``edit`` carries ``edited_action: {"name", "args"}``, ``reject`` an optional
  ``message``, ``respond`` the ``message`` given instead of running the tool), alone or as
  ``{"decisions": [decision]}``.

``ignore`` and ``reject`` deny the call, with the given text (if any) as the model's message.

Several held calls of one model turn are asked at once in the middleware's batched shape
(`turn_request`: ``{"action_requests": [{"name", "args", "description"}],
"review_configs": [{"action_name", "allowed_decisions"}]}``), answered with
``{"decisions": [...]}``, one decision per action request, in order (`read_decisions`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from gateway.approvals.context_text import context_text
from gateway.approvals.errors import InvalidHumanResponse
from gateway.approvals.pending import HumanDecision, PendingCall

__all__ = [
    "ReviewAnswer",
    "context_lines",
    "interrupt_config",
    "interrupt_request",
    "noted",
    "read_decisions",
    "read_response",
    "turn_request",
]

_CONFIG_OF: Final[dict[str, HumanDecision]] = {
    "allow_accept": "approve",
    "allow_edit": "edit",
    "allow_respond": "respond",
    "allow_ignore": "deny",
}
_MIDDLEWARE_OF: Final[dict[str, str]] = {
    "allow_accept": "approve",
    "allow_edit": "edit",
    "allow_ignore": "reject",
    "allow_respond": "respond",
}
_DENIED = "The call was rejected by a reviewer."


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewAnswer:
    """A reviewer's response in the gateway's terms.

    Attributes:
        decision: ``approve``, ``edit``, ``deny`` or ``respond``.
        message: The deny message, or the text given instead of running the tool.
        args: The new arguments of an ``edit``.
        given: The response type as the reviewer gave it (``accept``, ``ignore``, ``reject``...).
    """

    decision: HumanDecision
    message: str | None = None
    args: dict[str, Any] | None = None
    given: str = ""


def interrupt_config(decisions: Iterable[str]) -> dict[str, bool]:
    """The ``config`` of an interrupt request offering ``decisions``."""
    offered = set(decisions)
    return {key: decision in offered for key, decision in _CONFIG_OF.items()}


def interrupt_request(
    call: PendingCall, *, note: str | None = None, context: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The interrupt request for the held ``call``; ``note`` is added to the description (why
    an earlier response was refused), and so is its ``context`` pack when given
    (`gateway.approvals.context_pack`: what the tool does, why it was held and by which part
    of the rule's condition, who asks, what the session did before, the times, who else may
    decide and the votes left)."""
    description = f"{call.reason} (approval {call.id})" if call.reason else f"approval {call.id}"
    if context:
        description += "".join(f"\n{line}" for line in context_lines(context))
    return noted(
        {
            "action_request": {"action": call.tool, "args": call.args},
            "config": interrupt_config(call.decisions),
            "description": description,
            "lockgate": {
                "approval_id": call.id,
                "state": call.state,
                "rule_id": call.rule_id,
                "principal": call.principal,
                "decisions": list(call.decisions),
                "requested_at": _iso(call.created_at),
                "expires_at": _iso(call.expires_at),
            },
        },
        note,
    )


def context_lines(context: Mapping[str, Any]) -> list[str]:
    """A context pack as plain lines for a reviewer (`gateway.approvals.context_text`)."""
    return context_text(context)


def noted(request: dict[str, Any], note: str | None) -> dict[str, Any]:
    """``request`` with ``note`` (why the reviewer's last response was refused) added to its
    description."""
    if note:
        request["description"] = (
            f"{request['description']}\n\nYour last response was refused: {note}"
        )
    return request


def read_response(value: Any, *, action: str) -> ReviewAnswer:
    """The reviewer's answer in ``value`` (any shape of the module docstring) for a call of the
    tool ``action``.

    Raises:
        InvalidHumanResponse: not a known response shape or type.
    """
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, Mapping) and "decisions" in value:
        decisions = value["decisions"]
        if not isinstance(decisions, list) or len(decisions) != 1:
            raise InvalidHumanResponse("'decisions' must hold exactly one decision for this call")
        value = decisions[0]
    if not isinstance(value, Mapping) or not isinstance(value.get("type"), str):
        raise InvalidHumanResponse(
            "a response is an object with a 'type' (accept, edit, response, ignore; or "
            f"approve, edit, reject, respond), not {type(value).__name__}"
        )
    answer = _answer(value["type"], value, action)
    return replace(answer, given=value["type"])


def _answer(kind: str, value: Mapping[str, Any], action: str) -> ReviewAnswer:
    args = value.get("args")
    if kind in {"accept", "approve"}:
        return ReviewAnswer(decision="approve")
    if kind == "edit":
        return ReviewAnswer(decision="edit", args=_edited(value, action))
    if kind == "response":
        if not isinstance(args, str):
            raise InvalidHumanResponse("a 'response' carries its text in 'args'")
        return ReviewAnswer(decision="respond", message=args)
    if kind == "respond":  # HumanInTheLoopMiddleware: the text in 'message'
        if not isinstance(message := value.get("message"), str):
            raise InvalidHumanResponse("a 'respond' decision carries its text in 'message'")
        return ReviewAnswer(decision="respond", message=message)
    if kind in {"ignore", "reject"}:
        text = value.get("message", args)
        return ReviewAnswer(decision="deny", message=text if isinstance(text, str) else _DENIED)
    raise InvalidHumanResponse(f"unknown response type {kind!r}")


def _edited(value: Mapping[str, Any], action: str) -> dict[str, Any]:
    if "edited_action" in value:  # HumanInTheLoopMiddleware: {"name", "args"}
        edited = value["edited_action"]
        if not isinstance(edited, Mapping) or edited.get("name", action) != action:
            raise InvalidHumanResponse("an edit may change the arguments, not the tool")
        edited = edited.get("args")
    else:  # HumanResponse: the arguments, or Agent Inbox's {"action", "args"} action request
        edited = value.get("args")
        if (
            isinstance(edited, Mapping)
            and set(edited) == {"action", "args"}
            and edited["action"] == action
            and isinstance(edited["args"], Mapping)
        ):
            edited = edited["args"]
    if not isinstance(edited, Mapping):
        raise InvalidHumanResponse("an 'edit' carries the new arguments as an object")
    return dict(edited)


def turn_request(requests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One ``HumanInTheLoopMiddleware`` request for the held calls of a model turn, from their
    single-action ``requests`` (`interrupt_request`), in order."""
    actions, configs = [], []
    for request in requests:
        name, args = request["action_request"]["action"], request["action_request"]["args"]
        actions.append({"name": name, "args": args, "description": request["description"]})
        allowed = [kind for key, kind in _MIDDLEWARE_OF.items() if request["config"].get(key)]
        configs.append({"action_name": name, "allowed_decisions": allowed})
    lockgate = [request.get("lockgate", {}) for request in requests]
    return {"action_requests": actions, "review_configs": configs, "lockgate": lockgate}


def read_decisions(value: Any, *, count: int) -> list[Any]:
    """The ``count`` decisions of a reply to a `turn_request`, in order: ``{"decisions": [...]}``,
    a bare list, or (for one held call) a single response.

    Raises:
        InvalidHumanResponse: not a list of exactly ``count`` decisions.
    """
    if isinstance(value, Mapping) and "decisions" in value:
        value = value["decisions"]
    elif count == 1 and not isinstance(value, list):
        value = [value]
    if not isinstance(value, list) or len(value) != count:
        given = len(value) if isinstance(value, list) else type(value).__name__
        raise InvalidHumanResponse(
            f"the reply needs {{'decisions': [...]}} with {count} decision(s), one per action "
            f"request in order; got {given}"
        )
    return value


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
