"""Slack-compatible webhook bodies (``format: slack``): one readable message per event.

Slack's incoming webhooks (and Mattermost, Rocket.Chat, Teams' Slack-compatible connectors) take
``{"text": ...}`` with ``<url|label>`` links and ``*bold*``/`` `code` `` markup. A held call
links to its card on the approvals page (``link``: the gateway's public base URL) and names the
command that approves it. Values are redacted as in the event; markup characters in them are
escaped as Slack asks (``&``, ``<``, ``>``).
"""

from __future__ import annotations

import json
from typing import Any

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
            f"Or: `lockgate approvals approve {id}`" + _context_lines(data.get("tool_context"))
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


def _context_lines(context: Any) -> str:
    """What the tool does, its hints (the server's claims) and flags, and the client asking."""
    if not isinstance(context, dict):
        return ""
    lines = []
    if context.get("description"):
        lines.append(f"> {_escape(context['description'])}")
    hints = ", ".join(f"{k}={v}" for k, v in (context.get("hints") or {}).items())
    if hints:
        lines.append(f"Hints (the server's own claims): {_escape(hints)}")
    if context.get("flags"):
        lines.append(f"*Flags:* {_escape(', '.join(context['flags']))}")
    client = context.get("client") or {}
    named = " ".join(str(client[k]) for k in ("name", "version") if client.get(k))
    if named:
        lines.append(f"Client: {_escape(named)}")
    return "".join("\n" + line for line in lines)
