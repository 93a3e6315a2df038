"""`HttpInspector`: an external inspector behind a small JSON contract (docs/inspectors.md).

Request (POST, JSON): ``{"tool", "direction", "content", "principal"}``. Response: ``{"labels":
[...], "findings": [{"kind", "start", "end", "score"?}], "action": "allow|redact|deny|ask"}``;
every key optional. Anything else (no answer, a non-2xx status, a body off the contract, a span
outside the text) is `InspectorFailed`, and the inspector's ``on_error`` decides.
"""

from __future__ import annotations

from typing import Literal

import anyio
import httpx2
from pydantic import BaseModel, Field, ValidationError

from gateway.inspectors.base import InspectorFailed, Scan, ScanRequest
from gateway.inspectors.detectors import Span

__all__ = ["HttpInspector", "InspectorAnswer"]


class _Found(BaseModel):
    kind: str = Field(min_length=1, max_length=64)
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    score: float | None = None


class InspectorAnswer(BaseModel):
    """An external inspector's response body."""

    labels: list[str] = Field(default_factory=list)
    findings: list[_Found] = Field(default_factory=list)
    action: Literal["allow", "label", "redact", "deny", "ask"] = "allow"


class HttpInspector:
    """POSTs each text to ``url``; ``timeout`` bounds connecting and reading."""

    def __init__(self, url: str, *, timeout: float) -> None:
        self.url = url
        self.timeout = timeout

    async def scan(self, text: str, request: ScanRequest) -> Scan:
        body = {
            "tool": request.tool,
            "direction": request.direction,
            "content": text,
            "principal": request.principal,
        }
        client = httpx2.AsyncClient(timeout=self.timeout)
        try:
            response = await client.post(self.url, json=body)
        except httpx2.HTTPError as exc:
            raise InspectorFailed(f"inspector at {self.url} did not answer: {exc!r}") from None
        finally:
            with anyio.CancelScope(shield=True):  # cut off at the timeout: still close its socket
                await client.aclose()
        if not response.is_success:
            raise InspectorFailed(f"inspector at {self.url} answered {response.status_code}")
        try:
            answer = InspectorAnswer.model_validate_json(response.content)
        except ValidationError as exc:
            message = (
                f"inspector at {self.url} answered off the contract: {exc.error_count()} errors"
            )
            raise InspectorFailed(message) from None
        spans = []
        for found in answer.findings:
            if not found.start < found.end <= len(text):
                raise InspectorFailed(f"inspector at {self.url} gave a span outside the text")
            spans.append(Span(found.kind, found.start, found.end, found.score))
        action = None if answer.action == "allow" else answer.action
        return Scan(spans=tuple(spans), labels=frozenset(answer.labels), action=action)
