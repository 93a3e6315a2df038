"""The strings of a call's arguments or result, by path, and copies with spans masked."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from gateway.inspectors.detectors import Span
from toolsets.result import ToolResult

__all__ = ["argument_texts", "mask_spans", "redacted", "redacted_result", "result_texts"]


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}.{index}")


def argument_texts(args: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every string in ``args``, as ``(args.PATH, text)``."""
    return list(_strings(args, "args"))


def result_texts(result: ToolResult) -> list[tuple[str, str]]:
    """The text a model reads in ``result``: text blocks, embedded text resources, and every
    string of ``structuredContent``; as ``(PATH, text)``."""
    wire = result.wire
    found: list[tuple[str, str]] = []
    for index, block in enumerate(wire["content"]):
        if not isinstance(block, Mapping):
            continue
        if isinstance(block.get("text"), str):
            found.append((f"content.{index}.text", block["text"]))
        resource = block.get("resource")
        if isinstance(resource, Mapping) and isinstance(resource.get("text"), str):
            found.append((f"content.{index}.resource.text", resource["text"]))
    if wire.get("structuredContent") is not None:
        found.extend(_strings(wire["structuredContent"], "structuredContent"))
    return found


def mask_spans(text: str, spans: Sequence[Span]) -> str:
    """``text`` with each span replaced by ``[REDACTED:KIND]`` (overlapping spans merged)."""
    parts: list[str] = []
    cursor = 0
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if span.end <= cursor:
            continue
        if span.start < cursor:  # overlaps the span just masked: one mask covers both
            cursor = span.end
            continue
        parts.append(text[cursor : span.start])
        parts.append(f"[REDACTED:{span.kind}]")
        cursor = span.end
    parts.append(text[cursor:])
    return "".join(parts)


def redacted(value: Any, path: str, edits: Mapping[str, str]) -> Any:
    """A copy of ``value`` (at ``path``) with the strings at ``edits``' paths replaced; parts
    with nothing to replace are shared, not copied."""
    if isinstance(value, str):
        return edits.get(path, value)
    if not any(key == path or key.startswith(path + ".") for key in edits):
        return value
    if isinstance(value, Mapping):
        return {key: redacted(item, f"{path}.{key}", edits) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redacted(item, f"{path}.{index}", edits) for index, item in enumerate(value)]
    return value


def redacted_result(result: ToolResult, edits: Mapping[str, str]) -> ToolResult:
    """``result`` with the strings at ``edits``' paths (as `result_texts` names them) replaced."""
    if not edits:
        return result
    wire = dict(result.wire)
    wire["content"] = [
        redacted(block, f"content.{index}", edits) for index, block in enumerate(wire["content"])
    ]
    if wire.get("structuredContent") is not None:
        wire["structuredContent"] = redacted(wire["structuredContent"], "structuredContent", edits)
    return ToolResult.from_wire(wire)
