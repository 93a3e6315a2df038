"""Slack-compatible webhook bodies (``format: slack``): one readable message per event.

Slack's incoming webhooks (and Mattermost, Rocket.Chat, Teams' Slack-compatible connectors) take
``{"text": ...}`` with ``<url|label>`` links and ``*bold*``/`` `code` `` markup. A held call
links to its card on the approvals page (``link``: the gateway's public base URL) and names the
command that approves it, followed by the call's context pack as plain lines
(`gateway.approvals.context_text`: what the tool does, the rule and the condition that held it,
who asks, the session's calls before, the times, who else may decide). Values are redacted as in
the event; markup characters in them are escaped as Slack asks (``&``, ``<``, ``>``).
"""

from __future__ import annotations

import json
from typing import Any

from gateway.approvals.context_text import context_text
from gateway.events.model import Event

__all__ = ["slack_body"]


def _escape(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_body(event: Event, link: str | None) -> bytes:
    """The JSON body for ``event``."""
    data = event.data if isinstance(event.data, dict) else {}
    tool, who = _escape(data.get("tool", "")), _escape(data.get("principal", ""))
    if event.type == "tool.approval.requested":
        id = _escape(data.get("approval_id", ""))
        rule = _escape((data.get("decision") or {}).get("rule_id") or "default")
        card = f" <{link.rstrip('/')}/approvals#{id}|Open the card>." if link else ""
        text = (
            f"*Held for approval:* `{tool}` for `{who}` (rule `{rule}`): "
            f"{_escape(data.get('reason') or '')}.{card} "
            f"Or: `lockgate approvals approve {id}`" + _context_lines(data)
        )
    elif event.type == "tool.approval.resolved":
        text = (
            f"*{_escape(data.get('decision', ''))}* `{_escape(data.get('approval_id', ''))}`: "
            f"`{tool}` for `{who}`, by `{_escape(data.get('decided_by') or '')}`"
        )
    else:
        subject = f" `{tool}` by `{who}`" if tool else ""
        text = f"`{_escape(event.type)}`{subject}"
    return json.dumps({"text": text}, ensure_ascii=False).encode()


def _context_lines(data: dict[str, Any]) -> str:
    """The event's context pack (an event recorded before it carried one: its ``tool_context``)
    as lines; the tool's description quoted, its flags in bold."""
    context = data.get("context")
    if not isinstance(context, dict):
        found = data.get("tool_context")
        facts: dict[str, Any] = found if isinstance(found, dict) else {}
        about = {"description": facts.get("description"), "annotations": facts.get("hints")}
        about["flags"] = facts.get("flags")
        context = {"tool": about, "caller": {"client": facts.get("client")}}
    lines = [_escape(line) for line in context_text(context)]
    return "".join("\n" + _marked(line) for line in lines)


def _marked(line: str) -> str:
    if line.startswith("What it does: "):
        return "> " + line.removeprefix("What it does: ")
    if line.startswith("Flags: "):
        return "*Flags:* " + line.removeprefix("Flags: ")
    return line
