"""``logging``: how the gateway writes its log on stderr."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gateway.config._strict import Strict

__all__ = ["LoggingConfig"]


class LoggingConfig(Strict):
    """The gateway's log on stderr (``--log-format`` overrides ``format``)."""

    format: Literal["text", "json"] = Field(
        "text",
        description=(
            "text: 'lockgate: LEVEL: message' lines; json: one JSON object per line with "
            "timestamp, level, logger, message and the current trace_id and span_id "
            "(docs/telemetry.md)."
        ),
    )
