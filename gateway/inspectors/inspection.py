"""`Inspection`: the configured inspectors as the call chain's `toolsets.inspected.Inspection`.

For one side of a call it collects the strings (`gateway.inspectors.texts`), runs every inspector
that selects the tool and side, each within its ``timeout`` (its scans cached by content hash),
maps each finding to its configured action, and returns the `Verdict`: the content with
``redact`` spans masked, the findings, the labels, and the sentence a refusal reads.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from gateway.inspectors.base import ContentInspector, InspectorFailed, Scan, ScanRequest
from gateway.inspectors.cache import ScanCache
from gateway.inspectors.texts import (
    argument_texts,
    mask_spans,
    redacted,
    redacted_result,
    result_texts,
)
from toolsets.context import CallContext
from toolsets.findings import Direction, Finding, FindingAction
from toolsets.inspected import Verdict
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["ConfiguredInspector", "Inspection"]

logger = logging.getLogger(__name__)

INSPECTOR_ERROR = "inspector-error"
"""The kind of the finding a failed ``fail_closed`` inspector leaves (its action is deny)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfiguredInspector:
    """One named inspector with its selection and actions (see `InspectorConfig`)."""

    name: str
    scanner: ContentInspector
    directions: frozenset[Direction]
    tools: tuple[str, ...]
    actions: Mapping[str, FindingAction]
    labels: Mapping[str, str]
    timeout: float
    fail_closed: bool
    cache: ScanCache
    shadow: bool = False

    def selects(self, tool: str, direction: Direction) -> bool:
        """Whether it runs on ``direction`` of calls of the exposed tool ``tool``."""
        return direction in self.directions and any(
            fnmatch.fnmatchcase(tool, p) for p in self.tools
        )

    def action(self, kind: str, suggested: FindingAction | None) -> FindingAction:
        """The action for a finding of ``kind``: the kind's, the inspector's own, ``*``'s, or
        ``redact``."""
        return self.actions.get(kind) or suggested or self.actions.get("*") or "redact"

    def cached(self, text: str, direction: Direction) -> Scan | None:
        """The scan of ``text`` on ``direction`` if this inspector made it lately."""
        return self.cache.get(ScanCache.key(direction, text))

    async def scan(self, text: str, request: ScanRequest) -> Scan:
        """Scan ``text`` (and keep the scan in the cache)."""
        scan = await self.scanner.scan(text, request)
        self.cache.put(ScanCache.key(request.direction, text), scan)
        return scan


class _Found:
    """The findings of one side of one call, as the inspectors report them."""

    def __init__(self, direction: Direction) -> None:
        self.direction: Direction = direction
        self.findings: list[Finding] = []
        self.labels: dict[str, frozenset[str]] = {}
        self.spans: dict[str, list[tuple[FindingAction, Any]]] = {}
        self.errors: list[str] = []

    def add(self, inspector: ConfiguredInspector, path: str, scan: Scan) -> None:
        labels = set() if inspector.shadow else set(scan.labels)
        for span in scan.spans:
            action = inspector.action(span.kind, scan.action)
            self.findings.append(
                Finding(kind=span.kind, inspector=inspector.name, direction=self.direction,
                        where=path, start=span.start, end=span.end, action=action,
                        score=span.score, shadow=inspector.shadow)
            )  # fmt: skip
            if inspector.shadow:  # on record with what it would do; nothing is done
                continue
            self.spans.setdefault(path, []).append((action, span))
            if action == "label":
                labels.add(inspector.labels.get(span.kind, span.kind))
        if labels:
            source = f"inspector:{inspector.name}"
            self.labels[source] = self.labels.get(source, frozenset()) | labels

    def failed(self, inspector: ConfiguredInspector, tool: ToolDef, reason: str) -> None:
        message = f"inspector {inspector.name!r} could not inspect the {self.direction} ({reason})"
        if not inspector.fail_closed or inspector.shadow:
            logger.warning("%s of %s; on_error: fail_open lets it pass", message, tool.name)
            return
        self.errors.append(message)
        self.findings.append(
            Finding(kind=INSPECTOR_ERROR, inspector=inspector.name, direction=self.direction,
                    where="", start=0, end=0, action="deny")
        )  # fmt: skip

    def edits(self, texts: Sequence[tuple[str, str]], *, everything: bool) -> dict[str, str]:
        """The strings with their spans masked: ``redact`` ones, or (``everything``) all."""
        edits = {}
        for path, text in texts:
            spans = [
                s for action, s in self.spans.get(path, ()) if everything or action == "redact"
            ]
            if spans:
                edits[path] = mask_spans(text, spans)
        return edits

    def reason(self, tool: ToolDef) -> str:
        """Why the call stops: the kinds found and where, the failed inspectors."""
        stopping = [
            f for f in self.findings if f.action in ("deny", "ask") and f.where and not f.shadow
        ]
        found = ", ".join(sorted({f"{f.kind} in {f.where}" for f in stopping}))
        parts = [f"content inspection found {found}"] if found else []
        return "; ".join(parts + self.errors) + f" (the {self.direction} of {tool.name!r})"


class Inspection:
    """Implements `toolsets.inspected.Inspection` over the configured inspectors."""

    def __init__(self, inspectors: Sequence[ConfiguredInspector]) -> None:
        self.inspectors = tuple(inspectors)
        self._chosen: dict[tuple[str, Direction], tuple[ConfiguredInspector, ...]] = {}

    def _for(self, tool: ToolDef, direction: Direction) -> tuple[ConfiguredInspector, ...]:
        chosen = self._chosen.get((tool.name, direction))
        if chosen is None:
            chosen = tuple(i for i in self.inspectors if i.selects(tool.name, direction))
            self._chosen[(tool.name, direction)] = chosen
        return chosen

    def covers(self, tool: ToolDef, direction: Direction) -> bool:
        return bool(self._for(tool, direction))

    async def arguments(
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext
    ) -> Verdict[Mapping[str, Any]]:
        texts = argument_texts(args)
        found = await self._run(tool, "arguments", texts, ctx)
        if not found.findings:
            return Verdict(content=args, masked=args)
        return Verdict(
            content=redacted(args, "args", found.edits(texts, everything=False)),
            masked=redacted(args, "args", found.edits(texts, everything=True)),
            findings=tuple(found.findings),
            labels=found.labels,
            reason=found.reason(tool),
        )

    async def result(
        self, tool: ToolDef, result: ToolResult, ctx: CallContext
    ) -> Verdict[ToolResult]:
        texts = result_texts(result)
        found = await self._run(tool, "results", texts, ctx)
        if not found.findings:
            return Verdict(content=result, masked=result)
        return Verdict(
            content=redacted_result(result, found.edits(texts, everything=False)),
            masked=redacted_result(result, found.edits(texts, everything=True)),
            findings=tuple(found.findings),
            labels=found.labels,
            reason=found.reason(tool),
        )

    async def _run(
        self, tool: ToolDef, direction: Direction, texts: list[tuple[str, str]], ctx: CallContext
    ) -> _Found:
        found = _Found(direction)
        request = ScanRequest(tool=tool.name, direction=direction, principal=ctx.principal.id)
        for inspector in self._for(tool, direction):
            scans = [(path, text, inspector.cached(text, direction)) for path, text in texts]
            try:
                if any(scan is None for _, _, scan in scans):  # the timer only when it scans
                    with anyio.fail_after(inspector.timeout):
                        scans = [
                            (path, text, scan or await inspector.scan(text, request))
                            for path, text, scan in scans
                        ]
            except TimeoutError:
                found.failed(inspector, tool, f"no answer within {inspector.timeout:g}s")
            except InspectorFailed as exc:
                found.failed(inspector, tool, str(exc))
            for path, _, scan in scans:
                if scan is not None:
                    found.add(inspector, path, scan)
        return found
