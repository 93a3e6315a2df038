"""How the process writes its log: ``text`` lines (``lockgate: LEVEL: message``) or ``json``
(one `JsonFormatter` object per line), on the handlers ``lockgate`` set up at start."""

from __future__ import annotations

import logging
from typing import Any, Literal

import uvicorn.config

from gateway.logs.json_format import JsonFormatter

__all__ = ["LogFormat", "json_active", "use_format", "uvicorn_log_config"]

LogFormat = Literal["text", "json"]


def use_format(fmt: LogFormat) -> None:
    """From now on, every handler of the root logger writes ``fmt`` (``text`` leaves the
    format set at start as it is)."""
    if fmt != "json":
        return
    formatter = JsonFormatter()
    for handler in logging.getLogger().handlers:
        handler.setFormatter(formatter)


def json_active() -> bool:
    """Whether the root logger writes JSON lines."""
    return any(isinstance(h.formatter, JsonFormatter) for h in logging.getLogger().handlers)


def uvicorn_log_config() -> dict[str, Any] | None:
    """uvicorn's own logging setup for text logs; none for JSON logs, so that uvicorn's records
    reach the root logger's JSON handler instead of uvicorn's plain ones."""
    return None if json_active() else uvicorn.config.LOGGING_CONFIG
