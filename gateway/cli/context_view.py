"""``approvals show``'s context rows: what the tool does, why the call was held, who asks and
what the session did before (`gateway.approvals.context_pack`), one labelled line each."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["context_rows"]

_DESCRIPTION_WIDTH: Final = 300


def context_rows(context: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The rows for ``context`` (empty when the gateway sent none)."""
    if not context:
        return []
    tool, rule = context.get("tool", {}), context.get("rule", {})
    rows = [("does", _does(tool)), ("why", str(rule.get("text", "-")))]
    if tool.get("annotations") is not None:
        hints = ", ".join(f"{k}={v}" for k, v in tool["annotations"].items()) or "none"
        rows.append(("hints", f"{hints} ({tool.get('annotations_trust', '')})"))
    if tool.get("flags"):
        rows.append(("flags", ", ".join(tool["flags"])))
    client = context.get("caller", {}).get("client") or {}
    if client:
        said = " ".join(str(client[k]) for k in ("name", "version") if client.get(k))
        rows.append(
            (
                "client",
                f"{said or 'unnamed'} ({client.get('transport')}, "
                f"{client.get('protocol_version')})",
            )
        )
    rows += _session_rows(context.get("session", {}))
    preview = context.get("preview")
    if preview:
        text = " ".join(str(preview.get("text", "")).split())
        rows.append(("preview", f"{preview.get('tool')}: {text}"))
    rows.append(("digest", "sha256:" + str(context.get("arguments", {}).get("sha256", "-"))))
    return rows


def _does(tool: Mapping[str, Any]) -> str:
    if not tool.get("known", False):
        return "unknown now (its server may be down, or its definition waits for review)"
    text = " ".join(str(tool.get("description") or "(no description)").split())
    if len(text) > _DESCRIPTION_WIDTH:
        text = text[:_DESCRIPTION_WIDTH] + "…"
    title = tool.get("title")
    return f"{title}: {text}" if title else text


def _session_rows(session: Mapping[str, Any]) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    recent = session.get("recent") or []
    if recent:
        calls = ", ".join(f"{c['tool']}{'' if c.get('ok', True) else ' (failed)'}" for c in recent)
        rows.append(("before", calls))
    labels = session.get("labels") or {}
    if labels:
        brought = "; ".join(f"{name} (via {', '.join(tools)})" for name, tools in labels.items())
        rows.append(("labels", brought))
    return rows
