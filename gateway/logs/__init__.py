"""Logs: the JSON line format (``--log-format json``) and the choice of format at start."""

from gateway.logs.json_format import RESERVED, JsonFormatter, current_ids
from gateway.logs.setup import LogFormat, json_active, use_format, uvicorn_log_config

__all__ = [
    "RESERVED",
    "JsonFormatter",
    "LogFormat",
    "current_ids",
    "json_active",
    "use_format",
    "uvicorn_log_config",
]
