"""Asking the calling user to decide a held call (MCP elicitation form, both eras)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.approvals.pending import PendingCall
from toolsets.context import ElicitCallback
from toolsets.tooldef import ToolDef

__all__ = ["CallerAnswer", "ask_caller", "form_message", "form_schema", "parse_answer"]


@dataclass(frozen=True, slots=True)
class CallerAnswer:
    """The caller's decision on a held call."""

    decision: str
    message: str | None = None
    args: Mapping[str, Any] | None = None


def form_message(call: PendingCall, tool: ToolDef) -> str:
    """What the user reads: the exact tool, server, arguments and the policy's reason."""
    args = json.dumps(call.args, indent=2, ensure_ascii=True)
    return (
        f"Approve the call to {tool.name} (server {tool.server!r})?\n"
        f"Reason: {call.reason}\nArguments:\n{args}"
    )


def form_schema(call: PendingCall) -> dict[str, Any]:
    """A flat elicitation form offering the decisions the rule allows."""
    properties: dict[str, Any] = {
        "decision": {"type": "string", "enum": list(call.decisions), "title": "Decision"},
        "message": {
            "type": "string",
            "title": "Message",
            "description": "deny: what the model reads; respond: the result text",
        },
    }
    if "edit" in call.decisions:
        properties["args"] = {
            "type": "string",
            "title": "Edited arguments (JSON)",
            "description": "edit: the arguments to run instead, as a JSON object",
        }
    return {"type": "object", "properties": properties, "required": ["decision"]}


def parse_answer(action: str, content: Mapping[str, Any] | None) -> CallerAnswer | None:
    """The decision in an elicitation answer; None when the user did not decide (cancel)."""
    if action == "decline":
        return CallerAnswer("deny", "The user declined this call.")
    if action != "accept" or not content:
        return None
    decision = str(content.get("decision", ""))
    message = content.get("message")
    raw_args = content.get("args")
    args: Mapping[str, Any] | None = None
    if decision == "edit" and isinstance(raw_args, str) and raw_args.strip():
        try:
            parsed = json.loads(raw_args)
        except json.JSONDecodeError:
            return None
        args = parsed if isinstance(parsed, dict) else None
    return CallerAnswer(decision, str(message) if message else None, args)


async def ask_caller(
    elicit: ElicitCallback, call: PendingCall, tool: ToolDef
) -> CallerAnswer | None:
    """Ask over a legacy back-channel (``elicitation/create``)."""
    action, content = await elicit(form_message(call, tool), form_schema(call))
    return parse_answer(action, content)
