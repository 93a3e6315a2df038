"""A held call's context pack (`gateway.approvals.context_pack`) as plain lines, one rendering for
every text channel: Slack-format webhook messages and LangGraph interrupt descriptions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["context_text"]

_DESCRIPTION_WIDTH: Final = 300


def context_text(context: Mapping[str, Any]) -> list[str]:
    """What the tool does and its hints (the server's claims) and flags, why it was held (the
    rule, where it is written, the condition that held), who asks (principal, client), what the
    session did before and the labels it carries, the times, who may decide and the votes
    left, and the arguments' digest; a line each, those the pack has."""
    tool, rule = context.get("tool") or {}, context.get("rule") or {}
    lines = []
    if tool.get("description"):
        text = " ".join(str(tool["description"]).split())
        cut = text[:_DESCRIPTION_WIDTH] + ("…" if len(text) > _DESCRIPTION_WIDTH else "")
        lines.append(f"What it does: {cut}")
    if rule.get("text"):
        lines.append(f"Why held: {rule['text']}")
    hints = ", ".join(f"{k}={v}" for k, v in (tool.get("annotations") or {}).items())
    if hints:
        lines.append(f"Hints (the server's own claims): {hints}")
    if tool.get("flags"):
        lines.append(f"Flags: {', '.join(tool['flags'])}")
    lines += _caller(context.get("caller") or {})
    lines += _session(context.get("session") or {})
    lines += _times(context.get("times") or {})
    deciding = context.get("deciding") or {}
    if deciding.get("text"):
        lines.append(f"Who decides: {deciding['text']}")
    digest = (context.get("arguments") or {}).get("sha256")
    if digest:
        lines.append(f"Arguments: sha256:{digest}")
    return lines


def _caller(caller: Mapping[str, Any]) -> list[str]:
    client = caller.get("client") or {}
    named = " ".join(str(client[k]) for k in ("name", "version") if client.get(k))
    asker = f"Caller: {caller['principal']}" if caller.get("principal") else ""
    if named:
        asker = f"{asker}, client {named}" if asker else f"Client: {named}"
    return [asker] if asker else []


def _session(session: Mapping[str, Any]) -> list[str]:
    lines = []
    recent = session.get("recent") or []
    if recent:
        calls = (f"{c.get('tool')}{'' if c.get('ok', True) else ' (failed)'}" for c in recent)
        lines.append("Before this: " + ", ".join(calls))
    labels = session.get("labels") or {}
    if labels:
        brought = "; ".join(f"{name} (via {', '.join(tools)})" for name, tools in labels.items())
        lines.append(f"Session labels: {brought}")
    return lines


def _times(times: Mapping[str, Any]) -> list[str]:
    if not times.get("requested"):
        return []
    text = f"Requested {times['requested']}"
    if times.get("waited_seconds") is not None:
        text += f" ({_span(times['waited_seconds'])} ago)"
    if times.get("expires"):
        text += f", expires {times['expires']}"
        if times.get("left_seconds") is not None:
            text += f" (in {_span(times['left_seconds'])})"
    return [text]


def _span(seconds: float) -> str:
    """``299`` -> ``4m``: the largest whole unit."""
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"
