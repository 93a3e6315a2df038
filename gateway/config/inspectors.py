"""``inspectors``: content inspection of tool arguments and results, by name (built-in detectors,
an external HTTP inspector, or Microsoft Presidio)."""

from __future__ import annotations

import importlib.util
from typing import Literal, Self

from pydantic import Field, model_validator

from gateway.config._strict import Strict

__all__ = [
    "BUILTIN_DETECTORS",
    "PRESIDIO_INSTALL",
    "InspectorAction",
    "InspectorConfig",
]

BUILTIN_DETECTORS: tuple[str, ...] = (
    "credential",
    "email",
    "phone",
    "card",
    "iban",
    "national-id",
    "prompt-injection",
)
"""Every built-in detector; each finding's kind is its detector's name."""

InspectorAction = Literal["allow", "label", "redact", "ask", "deny"]
PRESIDIO_INSTALL = "pip install 'lockgate[presidio]'"


class InspectorConfig(Strict):
    """One content inspector: what it looks for, on which tools and side, and what follows."""

    type: Literal["builtin", "http", "presidio"] = Field(
        "builtin",
        description=(
            "builtin: lockgate's detectors; http: an external inspector (JSON contract in "
            "docs/inspectors.md); presidio: Microsoft Presidio's AnalyzerEngine (extra)."
        ),
    )
    detectors: list[str] = Field(
        default_factory=lambda: list(BUILTIN_DETECTORS),
        description=(
            "builtin: the detectors to run (credential, email, phone, card, iban, national-id, "
            "prompt-injection; prompt-injection looks at results only); presidio: the entity "
            "names to report (empty: all)."
        ),
    )
    direction: Literal["arguments", "results", "both"] = Field(
        "both", description="Inspect arguments (before the upstream), results, or both."
    )
    tools: list[str] = Field(
        default_factory=lambda: ["*"],
        description="Glob patterns of the exposed tool names this inspector runs on.",
    )
    actions: dict[str, InspectorAction] = Field(
        default_factory=dict,
        description=(
            "Action per finding kind (allow, label, redact, ask, deny); '*' for every other "
            "kind. Unnamed kinds: the http inspector's own action, else redact. ask on a "
            "result withholds it, as deny does (the call has run)."
        ),
    )
    labels: dict[str, str] = Field(
        default_factory=dict,
        description="Session label a 'label' action adds, per kind (default: the kind).",
    )
    timeout: float = Field(2.0, gt=0, description="Seconds this inspector may take per call.")
    on_error: Literal["fail_closed", "fail_open"] = Field(
        "fail_closed",
        description=(
            "When it errs or times out: fail_closed refuses the call (or withholds the "
            "result); fail_open lets it pass uninspected (logged)."
        ),
    )
    url: str | None = Field(None, description="http: the inspector's URL (POST, JSON).")
    score_threshold: float = Field(
        0.5, ge=0, le=1, description="presidio: the least score a finding needs."
    )
    cache_size: int = Field(
        1024, ge=0, description="Verdicts kept by content hash (LRU); 0: no cache."
    )
    mode: Literal["enforce", "shadow"] = Field(
        "enforce",
        description=(
            "shadow: its findings go on events and the audit log with the action they would "
            "take (shadow: true), and nothing is done: no label, redaction, hold or refusal."
        ),
    )

    @model_validator(mode="after")
    def _complete(self) -> Self:
        if self.type == "http" and not self.url:
            raise ValueError("an http inspector needs a url")
        if self.type == "builtin":
            unknown = sorted(set(self.detectors) - set(BUILTIN_DETECTORS))
            if unknown:
                raise ValueError(f"unknown detectors {unknown}; known: {list(BUILTIN_DETECTORS)}")
        if self.type == "presidio" and importlib.util.find_spec("presidio_analyzer") is None:
            raise ValueError(f"presidio-analyzer is not installed: {PRESIDIO_INSTALL}")
        return self
